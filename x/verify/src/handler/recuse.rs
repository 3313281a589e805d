use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::assign::assign;
use crate::end_block::unjudged;
use crate::settle::release;
use crate::{MsgRecuse, RecusedEvent, VerifyError, VerifyWrite};

/// The assigned verifier steps down: no slash and no fee; the round is drawn afresh among
/// the verifiers that have not served on the case.
pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &MsgRecuse,
) -> Result<(), VerifyError> {
    let mut case = super::assigned_case(state, ctx, signer, msg.lease_id)?;
    case.assignee = None;
    release(state, signer);
    state.emit(
        RecusedEvent {
            lease_id: msg.lease_id,
            verifier: *signer,
            round: case.round,
        }
        .into(),
    );
    // `served` holds the recuser, so the draw passes it by; a miss may still be reassigned.
    if assign(state, ctx, &mut case)? {
        state.put_case(&case);
        return Ok(());
    }
    unjudged(state, ctx, &mut case)
}
