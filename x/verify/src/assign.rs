//! Drawing verifiers for a case: uniform among eligible verifiers in address order, excluding
//! the lease's provider and client, the other replicas' providers and everyone who already
//! served on the case; `u64::from_be_bytes(first 8 bytes of BlockCtx::draw("verify/assign",
//! lease_id (8 bytes big-endian) ‖ round ‖ attempt)) mod n`.

use gpuchain_auction::{hold_lease, AuctionRead};
use gpuchain_types::{Address, BlockCtx, StateRead, StateWrite};

use crate::{AssignedEvent, Case, CaseStage, VerifyError, VerifyRead, VerifyWrite};

/// The verifier drawn for `case`'s current round in this block, if any is eligible.
pub(crate) fn draw(state: &impl StateRead, ctx: &BlockCtx, case: &Case) -> Option<Address> {
    let replicas: Vec<Address> = state
        .leases_of_order(case.order_id)
        .iter()
        .map(|l| l.provider)
        .collect();
    let candidates: Vec<Address> = state
        .eligible_verifiers(ctx.height)
        .into_iter()
        .map(|v| v.operator)
        .filter(|a| *a != case.provider && *a != case.client)
        .filter(|a| !replicas.contains(a) && !case.served.contains(a))
        .collect();
    let n = u64::try_from(candidates.len()).ok().filter(|n| *n > 0)?;
    let mut subject = case.lease_id.to_be_bytes().to_vec();
    subject.push(case.round);
    subject.push(u8::from(case.reassigned));
    let seed = ctx.draw("verify/assign", &subject);
    let mut first = [0u8; 8];
    first.copy_from_slice(seed.get(..8)?);
    let index = usize::try_from(u64::from_be_bytes(first) % n).ok()?;
    candidates.get(index).copied()
}

/// Assigns `verifier` to `case`'s current round: deadline, timer, hold on the lease, the
/// verifier's open-case count, the event. The caller stores the case.
pub(crate) fn assign_to(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    case: &mut Case,
    verifier: Address,
) -> Result<(), VerifyError> {
    let params = state.verify_params();
    let deadline = ctx
        .height
        .checked_add(params.verdict_deadline_blocks)
        .ok_or(VerifyError::Overflow)?;
    let hold = deadline.checked_add(1).ok_or(VerifyError::Overflow)?;
    let mut record = state
        .verifier(&verifier)
        .ok_or(VerifyError::NotAVerifier(verifier))?;
    record.open_cases = record
        .open_cases
        .checked_add(1)
        .ok_or(VerifyError::Overflow)?;
    hold_lease(state, case.lease_id, hold)?;
    state.put_verifier(&record);
    case.assignee = Some(verifier);
    case.deadline_height = deadline;
    case.stage = CaseStage::AwaitingVerdict;
    case.served.push(verifier);
    state.set_case_timer(deadline, case.lease_id);
    state.emit(
        AssignedEvent {
            lease_id: case.lease_id,
            verifier,
            deadline,
            round: case.round,
            provider: case.provider,
        }
        .into(),
    );
    Ok(())
}

/// Draws and assigns; `false` (and nothing written) when no verifier is eligible.
pub(crate) fn assign(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    case: &mut Case,
) -> Result<bool, VerifyError> {
    match draw(state, ctx, case) {
        Some(verifier) => assign_to(state, ctx, case, verifier).map(|()| true),
        None => Ok(false),
    }
}
