//! End of block, in this order: clear the orders whose bid window ends at this height, close
//! the reveal windows that end here (missed leases are slashed and refunded, the rest
//! judged), fire lease timers (payouts after the challenge window, closed comparisons, verdict fallbacks), then
//! split the fee pool. Queues are keyed by height, so a skipped height is caught up.

use gpuchain_staking::StakingWrite;
use gpuchain_types::{BlockCtx, StateReadExt, StateWrite};

use crate::clearing::{clear, eligible_bids};
use crate::escrow::{dispute_reserve, move_funds, refund};
use crate::judge::{
    audit_fallback, close_comparison, dispute_fallback, finish, judge_order, pay_or_check,
};
use crate::retire;
use crate::{
    distribution, module_account, state_key, AuctionError, AuctionRead, AuctionWrite, Lease,
    LeaseCreatedEvent, LeaseState, Order, OrderClearedEvent, OrderClosedEvent, OrderReopenedEvent,
    OrderState, TooFewBids,
};

/// Runs the auction's end-block work for `ctx.height`. An error is a broken invariant.
pub fn end_block(state: &mut impl StateWrite, ctx: &BlockCtx) -> Result<(), AuctionError> {
    for (key, order_id) in state.ids_due(state_key::clearing_queue_prefix(), ctx.height) {
        state.delete(key);
        if let Some(order) = state.order(order_id) {
            if order.state == OrderState::Open {
                clear_order(state, ctx, order)?;
            }
        }
    }
    for (key, order_id) in state.ids_due(state_key::reveal_queue_prefix(), ctx.height) {
        state.delete(key);
        close_reveal_window(state, ctx, order_id)?;
    }
    for (key, lease_id) in state.ids_due(state_key::lease_timers_prefix(), ctx.height) {
        state.delete(key);
        if let Some(lease) = state.lease(lease_id) {
            fire_timer(state, ctx, lease)?;
        }
    }
    for (key, order_id) in state.ids_due(state_key::retire_queue_prefix(), ctx.time_ms) {
        state.delete(key);
        retire::retire(state, order_id);
    }
    distribution::distribute_fee_pool(state)?;
    Ok(())
}

fn clear_order(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    mut order: Order,
) -> Result<(), AuctionError> {
    let bids = eligible_bids(state, ctx, &order);
    let k = usize::try_from(order.replicas).map_err(|_| AuctionError::Overflow)?;
    let Some(cleared) = clear(ctx, order.id, k, order.max_price_per_replica, &bids) else {
        return too_few_bids(state, ctx, order);
    };
    let price = cleared.clearing_price;
    let excess_per = order
        .max_price_per_replica
        .checked_sub(price)
        .ok_or(AuctionError::Overflow)?;
    let reserve = dispute_reserve(order.replicas, price, &state.auction_params())?;
    let excess = excess_per
        .checked_mul(u128::from(order.replicas))
        .and_then(|e| e.checked_add(order.dispute_reserve.checked_sub(reserve)?))
        .ok_or(AuctionError::Overflow)?;
    order.dispute_reserve = reserve;
    refund(state, &mut order, excess, "clearing_excess")?;
    order.escrowed = order
        .escrowed
        .checked_sub(order.verification_fee)
        .ok_or(AuctionError::Overflow)?;
    move_funds(
        state,
        &module_account::escrow(),
        &module_account::verification_pool(),
        order.verification_fee,
    )?;
    let deadline = ctx
        .height
        .checked_add(order.exec_deadline_blocks)
        .ok_or(AuctionError::Overflow)?;
    let reveal_end = deadline
        .checked_add(state.auction_params().reveal_window_blocks)
        .ok_or(AuctionError::Overflow)?;
    order.clearing_price = Some(price);
    order.state = OrderState::Cleared;
    state.emit(
        OrderClearedEvent {
            order_id: order.id,
            client: order.client,
            clearing_price: price,
            winners: order.replicas,
            bids: u32::try_from(cleared.ranked).unwrap_or(u32::MAX),
        }
        .into(),
    );
    for winner in &cleared.winners {
        let id = state.take_id(state_key::next_lease_id())?;
        let lease = Lease {
            id,
            order_id: order.id,
            provider: winner.provider,
            client: order.client,
            price,
            created_height: ctx.height,
            deadline_height: deadline,
            reveal_end_height: reveal_end,
            commitment: None,
            result_hash: None,
            payout_height: None,
            verdict_deadline_height: None,
            state: LeaseState::Open,
            verification_charge: 0,
            fetched: false,
        };
        state.increment_open_leases(&winner.provider)?;
        state.put_lease(&lease);
        state.emit(
            LeaseCreatedEvent {
                lease_id: id,
                order_id: order.id,
                provider: winner.provider,
                client: order.client,
                price,
                deadline_height: deadline,
            }
            .into(),
        );
    }
    state.enqueue(state_key::reveal_queue(reveal_end, order.id));
    state.put_order(&order);
    Ok(())
}

fn too_few_bids(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    mut order: Order,
) -> Result<(), AuctionError> {
    if order.on_too_few_bids == TooFewBids::ReopenOnce && !order.reopened {
        let window = order.bid_end_height.saturating_sub(order.created_height);
        order.bid_end_height = ctx
            .height
            .checked_add(window.max(1))
            .ok_or(AuctionError::Overflow)?;
        order.reopened = true;
        state.enqueue(state_key::clearing_queue(order.bid_end_height, order.id));
        state.emit(
            OrderReopenedEvent {
                order_id: order.id,
                client: order.client,
                bid_end_height: order.bid_end_height,
            }
            .into(),
        );
    } else {
        let all = order.escrowed;
        refund(state, &mut order, all, "too_few_bids")?;
        order.dispute_reserve = 0;
        order.state = OrderState::Expired;
        retire::schedule(state, ctx, order.id);
        state.emit(
            OrderClosedEvent {
                order_id: order.id,
                client: order.client,
                reason: "too_few_bids".into(),
            }
            .into(),
        );
    }
    state.put_order(&order);
    Ok(())
}

fn close_reveal_window(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    order_id: u64,
) -> Result<(), AuctionError> {
    for mut lease in state.leases_of_order(order_id) {
        if matches!(lease.state, LeaseState::Open | LeaseState::Committed) {
            finish(state, ctx, &mut lease, LeaseState::Missed, None)?;
        }
    }
    judge_order(state, ctx, order_id)
}

fn fire_timer(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    mut lease: Lease,
) -> Result<(), AuctionError> {
    let due = |at: Option<u64>| at.is_some_and(|h| h <= ctx.height);
    match lease.state {
        LeaseState::Accepted if due(lease.payout_height) => pay_or_check(state, ctx, &mut lease),
        // No verifier could check it in time (none eligible for the whole wait): paid, as an
        // audit nobody judged is accepted.
        LeaseState::AvailabilityPending if due(lease.verdict_deadline_height) => {
            finish(state, ctx, &mut lease, LeaseState::Paid, None)
        }
        LeaseState::AuditPending | LeaseState::AuditFollowing
            if due(lease.verdict_deadline_height) =>
        {
            audit_fallback(state, ctx, &mut lease)
        }
        LeaseState::Comparing if due(lease.verdict_deadline_height) => {
            close_comparison(state, ctx, lease.order_id)
        }
        LeaseState::Disputed if due(lease.verdict_deadline_height) => {
            dispute_fallback(state, ctx, &mut lease)
        }
        // A stale timer: the lease moved on since it was set.
        _ => Ok(()),
    }
}
