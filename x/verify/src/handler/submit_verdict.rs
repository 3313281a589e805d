use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::assign::assign;
use crate::settle::settle;
use crate::{
    CaseStage, MsgSubmitVerdict, PostedVerdict, VerdictPostedEvent, VerifyError, VerifyRead,
    VerifyWrite,
};

/// The assigned verifier's verdict. Round 0 opens the appeal window; round 1 settles if it
/// agrees with the first verdict and otherwise draws a tie-breaker; round 2 settles.
pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &MsgSubmitVerdict,
) -> Result<(), VerifyError> {
    let mut case = super::assigned_case(state, ctx, signer, msg.lease_id)?;
    let mut verifier = state
        .verifier(signer)
        .ok_or(VerifyError::NotAVerifier(*signer))?;
    let params = state.verify_params();
    let appeal_end = ctx
        .height
        .checked_add(params.appeal_window_blocks)
        .ok_or(VerifyError::Overflow)?;
    let hold = appeal_end.checked_add(1).ok_or(VerifyError::Overflow)?;

    verifier.verdicts = verifier.verdicts.saturating_add(1);
    state.put_verifier(&verifier);
    case.assignee = None;
    case.verdicts.push(PostedVerdict {
        verifier: *signer,
        output_hash: msg.output_hash,
        verdict: msg.verdict,
        height: ctx.height,
    });
    state.emit(
        VerdictPostedEvent {
            lease_id: msg.lease_id,
            verifier: *signer,
            verdict: msg.verdict.name().into(),
            output_hash: hex::encode(msg.output_hash),
            round: case.round,
        }
        .into(),
    );
    let first = case.verdicts.first().map(|v| v.verdict);
    match case.round {
        0 => {
            crate::assign::hold_open_lease(state, case.lease_id, hold)?;
            case.stage = CaseStage::AppealWindow;
            case.appeal_end_height = Some(appeal_end);
            state.set_case_timer(appeal_end, case.lease_id);
            state.put_case(&case);
            Ok(())
        }
        1 if first == Some(msg.verdict) => settle(state, ctx, &mut case, first),
        1 => {
            case.round = 2;
            case.reassigned = false;
            if assign(state, ctx, &mut case)? {
                state.put_case(&case);
                Ok(())
            } else {
                settle(state, ctx, &mut case, None)
            }
        }
        _ => settle(state, ctx, &mut case, Some(msg.verdict)),
    }
}
