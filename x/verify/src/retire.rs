//! State retirement of this module, on the auction's `retention_secs` of block time: a closed
//! case whose lease is final (or already retired) is deleted that long after it closed, and
//! the mark of a challenged order once the order itself is retired. A case closed with no verdict
//! while its lease still waits is kept (a new draw reads who served on it) and looked at
//! again a retention later; an open case is never touched.

use gpuchain_auction::AuctionRead;
use gpuchain_types::{BlockCtx, StateReadExt, StateWrite, StateWriteExt};

use crate::{state_key, CaseStage, VerifyRead};

/// The block time, in ms, a retention after the block of `ctx` (`None`: kept).
fn after_retention(state: &impl VerifyRead, ctx: &BlockCtx) -> Option<u64> {
    ctx.retirement_due(state.auction_params().retention_secs)
}

/// Queues the case of `lease_id`, closed in the block of `ctx`.
pub(crate) fn schedule_case(state: &mut impl StateWrite, ctx: &BlockCtx, lease_id: u64) {
    if let Some(due_ms) = after_retention(state, ctx) {
        state.put(state_key::retire_case_queue(due_ms, lease_id), &());
    }
}

/// Queues the challenged mark of `order_id`, set in the block of `ctx`.
pub(crate) fn schedule_challenged(state: &mut impl StateWrite, ctx: &BlockCtx, order_id: u64) {
    if let Some(due_ms) = after_retention(state, ctx) {
        state.put(state_key::retire_challenged_queue(due_ms, order_id), &());
    }
}

/// Runs the retirements due by the block time of `ctx`.
pub(crate) fn run(state: &mut impl StateWrite, ctx: &BlockCtx) {
    for (key, lease_id) in state.ids_due(state_key::retire_case_prefix(), ctx.time_ms) {
        state.delete(key);
        let Some(case) = state.case(lease_id) else {
            continue;
        };
        if case.stage != CaseStage::Closed {
            continue;
        }
        if state.lease(lease_id).is_some_and(|l| !l.state.is_final()) {
            schedule_case(state, ctx, lease_id);
            continue;
        }
        state.delete(state_key::case(lease_id));
    }
    let due = state.ids_due(state_key::retire_challenged_prefix(), ctx.time_ms);
    for (key, order_id) in due {
        state.delete(key);
        if state.order(order_id).is_some() {
            schedule_challenged(state, ctx, order_id);
        } else {
            state.delete(state_key::challenged_order(order_id));
        }
    }
}
