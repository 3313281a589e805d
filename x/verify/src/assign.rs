//! Drawing verifiers for a case: weighted by bond among eligible verifiers in address order,
//! excluding the order's parties (the client and every replica's provider), the accounts
//! that first funded a party, the accounts a party first funded, and everyone who already
//! served on the case. With `r = u128::from_be_bytes(first 16 bytes of
//! BlockCtx::draw("verify/assign", lease_id (8 bytes big-endian) ‖ round ‖ attempt)) mod
//! total bond`, the drawn verifier is the first whose running sum of bonds exceeds `r`.
//!
//! Weighting by bond rather than drawing per identity means splitting one stake over many
//! verifier accounts buys no extra chance of judging a case: a party that wants its own
//! verifier on its own dispute needs that share of all verifier stake at risk.

use gpuchain_auction::settlement::hold_lease;
use gpuchain_auction::{AuctionError, AuctionRead};
use gpuchain_types::{Address, BlockCtx, StateRead, StateWrite};

use crate::{AssignedEvent, Case, CaseStage, VerifyError, VerifyRead, VerifyWrite};

/// The accounts that may not judge `case`: the client and every replica's provider (the
/// draw also skips the accounts tied to them by first funding).
fn parties(state: &impl StateRead, case: &Case) -> Vec<Address> {
    let mut parties = vec![case.client, case.provider];
    parties.extend(
        state
            .leases_of_order(case.order_id)
            .iter()
            .map(|l| l.provider),
    );
    parties
}

/// The verifier drawn for `case`'s current round in this block, if any is eligible.
pub(crate) fn draw(state: &impl StateRead, ctx: &BlockCtx, case: &Case) -> Option<Address> {
    let mut subject = case.lease_id.to_be_bytes().to_vec();
    subject.push(case.round);
    subject.push(u8::from(case.reassigned));
    crate::jury::draw(
        state,
        ctx,
        "verify/assign",
        &subject,
        &parties(state, case),
        &case.served,
    )
}

/// Holds `lease_id` until `until_height` (see `hold_lease`) while it can still take a
/// verdict. A twin's verdict spares a lease with a case of its own, so a lease should not end
/// under its open case; should one end (or be retired with its order) all the same, the case
/// goes on without a hold, since who was right still decides which verifiers are slashed
/// and whether the deposit comes back, and `settle` leaves the lease alone: a verdict
/// transaction or an end-block must never fail on it, which halts the chain.
pub(crate) fn hold_open_lease(
    state: &mut impl StateWrite,
    lease_id: u64,
    until_height: u64,
) -> Result<(), AuctionError> {
    match state.lease(lease_id) {
        // Ended, or ended and retired with its order while the case went on.
        None => Ok(()),
        Some(lease) if !lease.state.takes_verdict() => Ok(()),
        Some(_) => hold_lease(state, lease_id, until_height),
    }
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
    hold_open_lease(state, case.lease_id, hold)?;
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
