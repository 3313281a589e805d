use gpuchain_staking::StakingRead;
use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::{
    MsgBidServing, ServingBid, ServingBidEvent, ServingError, ServingOrderState, ServingRead,
    ServingWrite,
};

/// Most bids one order keeps.
const MAX_BIDS_PER_ORDER: usize = 256;

pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    m: &MsgBidServing,
) -> Result<(), ServingError> {
    let order = state
        .serving_order(m.order_id)
        .ok_or(ServingError::UnknownOrder(m.order_id))?;
    if order.state != ServingOrderState::Bidding || ctx.height > order.bid_end_height {
        return Err(ServingError::BidWindowClosed {
            id: order.id,
            end: order.bid_end_height,
        });
    }
    if order.client == *signer {
        return Err(ServingError::SelfBid);
    }
    if m.price == 0 {
        return Err(ServingError::ZeroPrice);
    }
    if !crate::is_endpoint_url(&m.endpoint) {
        return Err(ServingError::BadEndpoint(m.endpoint.clone()));
    }
    if m.price > order.max_price {
        return Err(ServingError::PriceAboveMax {
            price: m.price,
            max: order.max_price,
        });
    }
    if !state.is_eligible_provider(signer, ctx.height) {
        return Err(ServingError::NotEligible(*signer));
    }
    if let Some(region) = &order.region {
        let here = state
            .provider(signer)
            .is_some_and(|p| &p.attrs.region == region);
        if !here {
            return Err(ServingError::WrongRegion(*signer));
        }
    }
    if state.serving_bid(order.id, signer).is_some() {
        return Err(ServingError::DuplicateBid(*signer));
    }
    if state.serving_bids(order.id).len() >= MAX_BIDS_PER_ORDER {
        return Err(ServingError::InvalidOrder(format!(
            "the order already has {MAX_BIDS_PER_ORDER} bids"
        )));
    }
    state.put_serving_bid(&ServingBid {
        order_id: order.id,
        provider: *signer,
        price: m.price,
        height: ctx.height,
        endpoint: m.endpoint.clone(),
    });
    state.emit(
        ServingBidEvent {
            order_id: order.id,
            provider: *signer,
            price: m.price,
        }
        .into(),
    );
    Ok(())
}
