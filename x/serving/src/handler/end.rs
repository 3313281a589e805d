use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::end_block::close_now;
use crate::{MsgEndServing, ServingError, ServingOrderState, ServingRead, ServingWrite, Timer};

pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    m: &MsgEndServing,
) -> Result<(), ServingError> {
    let mut order = state
        .serving_order(m.order_id)
        .ok_or(ServingError::UnknownOrder(m.order_id))?;
    if order.client != *signer {
        return Err(ServingError::NotAllowed {
            signer: *signer,
            allowed: "the order's client",
        });
    }
    match order.state {
        ServingOrderState::Closed => Err(ServingError::OrderClosed(order.id)),
        ServingOrderState::Bidding => {
            state.cancel_serving_timer(order.bid_end_height, Timer::Clear(order.id));
            state.delete_serving_bids(order.id);
            close_now(state, ctx, order)
        }
        ServingOrderState::Serving => {
            if ctx.height >= order.end_height {
                return Err(ServingError::InvalidOrder(format!(
                    "order {} already stopped serving at height {}; its deposit's rest is refunded at {}",
                    order.id, order.end_height, order.close_height
                )));
            }
            let grace = state.serving_params().claim_grace_blocks;
            state.cancel_serving_timer(order.close_height, Timer::Close(order.id));
            order.end_height = ctx.height;
            order.close_height = ctx
                .height
                .checked_add(grace)
                .ok_or(ServingError::Overflow)?;
            state.set_serving_timer(order.close_height, Timer::Close(order.id));
            for lease_id in &order.leases {
                if let Some(mut lease) = state.serving_lease(*lease_id) {
                    lease.end_height = lease.end_height.min(ctx.height);
                    state.put_serving_lease(&lease);
                }
            }
            state.put_serving_order(&order);
            Ok(())
        }
    }
}
