//! State retirement: a closed order (settled, cancelled or expired) holds no funds and waits
//! for nothing, so `retention_secs` of block time after it closed the order, its bids and its
//! leases are deleted with every index entry that names them. Reputation keeps its own
//! bounded history and slash records stay; the retired objects remain provable at the
//! heights before their retirement on nodes that keep old versions. Ids are never reused, so
//! an id below the next id that is absent was retired.

use gpuchain_types::{BlockCtx, StateWrite};

use crate::{state_key, AuctionRead, AuctionWrite, OrderRetiredEvent};

/// Queues `order_id`, closed in the block of `ctx`, for retirement (nothing with retention 0).
pub(crate) fn schedule(state: &mut impl StateWrite, ctx: &BlockCtx, order_id: u64) {
    if let Some(due_ms) = ctx.retirement_due(state.auction_params().retention_secs) {
        state.enqueue(state_key::retire_queue(due_ms, order_id));
    }
}

/// Deletes a closed order and everything stored for it. An order that is not closed (a
/// broken invariant, never expected) or already gone is left alone.
pub(crate) fn retire(state: &mut impl StateWrite, order_id: u64) {
    let Some(order) = state.order(order_id) else {
        return;
    };
    let leases = state.leases_of_order(order_id);
    if !order.state.is_closed() || leases.iter().any(|l| !l.state.is_final()) {
        return;
    }
    for bid in state.bids(order_id) {
        state.delete(state_key::bid(order_id, &bid.provider));
    }
    state.delete(state_key::bid_count(order_id));
    for lease in &leases {
        state.delete(state_key::lease(lease.id));
        state.delete(state_key::lease_by_order(order_id, lease.id));
        state.delete(state_key::lease_by_provider(&lease.provider, lease.id));
        state.delete(state_key::comparison(lease.id));
    }
    state.delete(state_key::order(order_id));
    state.delete(state_key::order_by_client(&order.client, order_id));
    state.emit(
        OrderRetiredEvent {
            order_id,
            client: order.client,
            leases: u32::try_from(leases.len()).unwrap_or(u32::MAX),
        }
        .into(),
    );
}
