use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::escrow::refund;
use crate::{
    state_key, AuctionError, AuctionRead, AuctionWrite, MsgCancelOrder, OrderClosedEvent,
    OrderState,
};

pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &MsgCancelOrder,
) -> Result<(), AuctionError> {
    let mut order = state
        .order(msg.order_id)
        .ok_or(AuctionError::UnknownOrder(msg.order_id))?;
    if order.client != *signer {
        return Err(AuctionError::NotOrderClient(*signer));
    }
    if order.state != OrderState::Open {
        return Err(AuctionError::OrderNotOpen {
            id: order.id,
            state: order.state,
        });
    }
    let all = order.escrowed;
    refund(state, &mut order, all, "cancelled")?;
    order.dispute_reserve = 0;
    order.state = OrderState::Cancelled;
    crate::retire::schedule(state, ctx, order.id);
    state.delete(state_key::clearing_queue(order.bid_end_height, order.id));
    state.put_order(&order);
    state.emit(
        OrderClosedEvent {
            order_id: order.id,
            client: order.client,
            reason: "cancelled".into(),
        }
        .into(),
    );
    Ok(())
}
