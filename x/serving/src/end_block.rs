//! The serving end-block: every timer due at this height, in key order (height, kind, id),
//! then the retirements due by this block's time.

use gpuchain_slashing::{slash_provider, FaultKind};
use gpuchain_staking::{StakingRead, StakingWrite};
use gpuchain_types::{BlockCtx, StateReadExt, StateWrite, StateWriteExt};

use crate::audit;
use crate::escrow::{drop_lease, move_funds};
use crate::{
    module_account::serving_escrow, ClaimStage, ServingClearedEvent, ServingClosedEvent,
    ServingError, ServingLease, ServingLeaseEvent, ServingLeaseState, ServingOrder,
    ServingOrderState, ServingRead, ServingWrite, Timer,
};

/// Runs the timers due by `ctx.height`, then the retirements due by `ctx.time_ms`. An error
/// is a broken invariant: the node halts.
pub fn end_block(state: &mut impl StateWrite, ctx: &BlockCtx) -> Result<(), ServingError> {
    let due: Vec<(String, Timer)> = state.due_by(crate::state_key::timers_prefix(), ctx.height);
    for (key, timer) in due {
        state.delete(key);
        match timer {
            Timer::Clear(id) => clear(state, ctx, id)?,
            Timer::Close(id) => close(state, ctx, id)?,
            Timer::Report(id) => report_deadline(state, ctx, id)?,
            Timer::Draw(id) => {
                if let Some(claim) = state
                    .serving_claim(id)
                    .filter(|c| c.stage == ClaimStage::Posted)
                {
                    audit::draw(state, ctx, claim)?;
                }
            }
            Timer::Reveal(id) => {
                if let Some(claim) = state.serving_claim(id) {
                    if matches!(claim.stage, ClaimStage::AwaitingReveal { .. }) {
                        audit::withheld(state, ctx, claim)?;
                    }
                }
            }
            Timer::Verdict(id) => {
                if let Some(mut claim) = state.serving_claim(id) {
                    let stage = std::mem::replace(&mut claim.stage, ClaimStage::Posted);
                    match stage {
                        ClaimStage::Judging(j) if j.deadline == ctx.height => {
                            audit::missed(state, ctx, claim, j)?;
                        }
                        _ => {}
                    }
                }
            }
            Timer::Appeal(id) => {
                if let Some(claim) = state.serving_claim(id) {
                    audit::window_closed(state, ctx, claim)?;
                }
            }
        }
    }
    let due: Vec<(String, u64)> =
        state.due_by(crate::state_key::retire_queue_prefix(), ctx.time_ms);
    for (key, order_id) in due {
        state.delete(key);
        retire(state, ctx, order_id)?;
    }
    Ok(())
}

/// Clears an order at the end of its bid window: the `providers` lowest eligible bids win
/// at the highest winning price. A bid wins only if some verifier could judge its claims:
/// a provider that is the only verifier to declare the model (or funded it first) would
/// leave its claims unjudged, and so paid.
fn clear(state: &mut impl StateWrite, ctx: &BlockCtx, order_id: u64) -> Result<(), ServingError> {
    let Some(mut order) = state
        .serving_order(order_id)
        .filter(|o| o.state == ServingOrderState::Bidding)
    else {
        return Ok(());
    };
    let mut bids: Vec<_> = state
        .serving_bids(order_id)
        .into_iter()
        .filter(|b| state.is_eligible_provider(&b.provider, ctx.height))
        .filter(|b| {
            let parties = [order.client, b.provider];
            crate::audit::judged_for(state, ctx.height, &order.model.blake3, &parties)
        })
        .collect();
    bids.sort_by_key(|b| (b.price, b.height, b.provider));
    let wanted = usize::try_from(order.providers).map_err(|_| ServingError::Overflow)?;
    bids.truncate(wanted);
    state.delete_serving_bids(order_id);
    let Some(price) = bids.iter().map(|b| b.price).max() else {
        return close_now(state, ctx, order);
    };
    let params = state.serving_params();
    order.price = price;
    order.end_height = ctx
        .height
        .checked_add(order.duration_blocks)
        .ok_or(ServingError::Overflow)?;
    order.close_height = order
        .end_height
        .checked_add(params.claim_grace_blocks)
        .ok_or(ServingError::Overflow)?;
    order.state = ServingOrderState::Serving;
    for bid in &bids {
        let lease = ServingLease {
            id: state.next_serving_id("lease")?,
            order_id,
            provider: bid.provider,
            client: order.client,
            model: order.model.clone(),
            price,
            start_height: ctx.height,
            end_height: order.end_height,
            next_seq: 0,
            units: 0,
            paid: 0,
            open_claims: 0,
            report_deadline: None,
            state: ServingLeaseState::Serving,
            endpoint: bid.endpoint.clone(),
        };
        state.increment_open_leases(&bid.provider)?;
        state.put_serving_lease(&lease);
        order.leases.push(lease.id);
        state.emit(
            ServingLeaseEvent {
                lease_id: lease.id,
                order_id,
                provider: lease.provider,
                client: lease.client,
                model: lease.model.name.clone(),
                price,
                end_height: lease.end_height,
            }
            .into(),
        );
    }
    state.set_serving_timer(order.close_height, Timer::Close(order_id));
    state.put_serving_order(&order);
    state.emit(
        ServingClearedEvent {
            order_id,
            client: order.client,
            price,
            leases: u32::try_from(bids.len()).map_err(|_| ServingError::Overflow)?,
            end_height: order.end_height,
        }
        .into(),
    );
    Ok(())
}

/// Closes an order that never served (no bids, or ended while bidding): everything back.
pub(crate) fn close_now(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    mut order: ServingOrder,
) -> Result<(), ServingError> {
    let refunded = order.deposit;
    move_funds(state, &serving_escrow(), &order.client, refunded)?;
    order.deposit = 0;
    order.state = ServingOrderState::Closed;
    order.close_height = ctx.height;
    schedule_retire(state, ctx, order.id)?;
    state.put_serving_order(&order);
    state.emit(
        ServingClearedEvent {
            order_id: order.id,
            client: order.client,
            price: 0,
            leases: 0,
            end_height: ctx.height,
        }
        .into(),
    );
    state.emit(
        ServingClosedEvent {
            order_id: order.id,
            client: order.client,
            refunded,
        }
        .into(),
    );
    Ok(())
}

/// The claim grace after the order's end passed: the deposit's rest goes back and the leases
/// close.
fn close(state: &mut impl StateWrite, ctx: &BlockCtx, order_id: u64) -> Result<(), ServingError> {
    let Some(mut order) = state
        .serving_order(order_id)
        .filter(|o| o.state == ServingOrderState::Serving && o.close_height == ctx.height)
    else {
        return Ok(());
    };
    let refunded = order.deposit;
    move_funds(state, &serving_escrow(), &order.client, refunded)?;
    order.deposit = 0;
    order.state = ServingOrderState::Closed;
    for lease_id in &order.leases {
        let Some(mut lease) = state.serving_lease(*lease_id) else {
            continue;
        };
        lease.state = ServingLeaseState::Closed;
        if lease.open_claims == 0 {
            state.decrement_open_leases(&lease.provider)?;
        }
        state.put_serving_lease(&lease);
    }
    schedule_retire(state, ctx, order_id)?;
    state.put_serving_order(&order);
    state.emit(
        ServingClosedEvent {
            order_id,
            client: order.client,
            refunded,
        }
        .into(),
    );
    Ok(())
}

fn schedule_retire(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    order_id: u64,
) -> Result<(), ServingError> {
    let due_ms = ctx
        .time_after_secs(state.serving_params().retention_secs)
        .ok_or(ServingError::Overflow)?;
    state.put(crate::state_key::retire_queue(due_ms, order_id), &order_id);
    Ok(())
}

/// Deletes a closed order and its leases, once none of its claims is open.
fn retire(state: &mut impl StateWrite, ctx: &BlockCtx, order_id: u64) -> Result<(), ServingError> {
    let Some(order) = state
        .serving_order(order_id)
        .filter(|o| o.state == ServingOrderState::Closed)
    else {
        return Ok(());
    };
    let leases: Vec<ServingLease> = order
        .leases
        .iter()
        .filter_map(|id| state.serving_lease(*id))
        .collect();
    if leases.iter().any(|l| l.open_claims > 0) {
        return schedule_retire(state, ctx, order_id);
    }
    for lease in &leases {
        state.delete_serving_lease(lease);
    }
    state.delete_serving_order(order_id);
    Ok(())
}

/// A report's deadline passed: a provider that sent no heartbeat loses the lease and the
/// abandoned-lease share of its bond.
fn report_deadline(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    lease_id: u64,
) -> Result<(), ServingError> {
    let Some(lease) = state
        .serving_lease(lease_id)
        .filter(|l| l.report_deadline == Some(ctx.height))
    else {
        return Ok(());
    };
    if state.provider(&lease.provider).is_some() {
        slash_provider(
            state,
            ctx,
            &lease.provider,
            FaultKind::AbandonedLease,
            &lease.client,
            None,
            None,
        )?;
    }
    let mut lease = lease;
    lease.report_deadline = None;
    state.put_serving_lease(&lease);
    if lease.state == ServingLeaseState::Serving {
        drop_lease(state, ctx, lease_id, "unresponsive")?;
    }
    Ok(())
}
