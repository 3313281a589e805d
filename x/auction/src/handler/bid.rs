use gpuchain_staking::StakingRead;
use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::{AuctionError, AuctionRead, AuctionWrite, Bid, BidPlacedEvent, MsgBid, OrderState};

pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &MsgBid,
) -> Result<(), AuctionError> {
    let order = state
        .order(msg.order_id)
        .ok_or(AuctionError::UnknownOrder(msg.order_id))?;
    if order.state != OrderState::Open {
        return Err(AuctionError::OrderNotOpen {
            id: order.id,
            state: order.state,
        });
    }
    if ctx.height > order.bid_end_height {
        return Err(AuctionError::BidWindowClosed {
            id: order.id,
            end: order.bid_end_height,
        });
    }
    if order.client == *signer {
        return Err(AuctionError::SelfBid);
    }
    if msg.price == 0 {
        return Err(AuctionError::ZeroPrice);
    }
    if !state.is_eligible_provider(signer, ctx.height) {
        return Err(AuctionError::NotEligible(*signer));
    }
    let meets = state
        .provider(signer)
        .is_some_and(|p| order.requirements.matches(&p.attrs));
    if !meets {
        return Err(AuctionError::RequirementsNotMet(*signer));
    }
    if msg.price > order.max_price_per_replica {
        return Err(AuctionError::PriceAboveMax {
            price: msg.price,
            max: order.max_price_per_replica,
        });
    }
    if state.bid(order.id, signer).is_some() {
        return Err(AuctionError::DuplicateBid(*signer));
    }
    let max = state.auction_params().max_bids_per_order;
    if state.bid_count(order.id) >= max {
        return Err(AuctionError::TooManyBids(max));
    }
    state.add_bid(&Bid {
        order_id: order.id,
        provider: *signer,
        price: msg.price,
        height: ctx.height,
    })?;
    state.emit(
        BidPlacedEvent {
            order_id: order.id,
            provider: *signer,
            price: msg.price,
        }
        .into(),
    );
    Ok(())
}
