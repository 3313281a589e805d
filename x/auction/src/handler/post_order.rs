use gpuchain_bank::BankRead;
use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::escrow::{move_funds, order_cost};
use crate::params::MAX_REPLICAS;
use crate::{
    module_account, state_key, AuctionError, AuctionParams, AuctionRead, AuctionWrite,
    MsgPostOrder, Order, OrderPostedEvent, OrderState,
};

fn text_ok(text: &Option<String>, field: &'static str, max: u32) -> Result<(), AuctionError> {
    let Some(t) = text else {
        return Ok(());
    };
    let long = u32::try_from(t.len()).map_or(true, |l| l > max);
    if t.is_empty() || long || !t.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err(AuctionError::RequirementText { field, max });
    }
    Ok(())
}

pub(super) fn check_stateless(
    msg: &MsgPostOrder,
    params: &AuctionParams,
) -> Result<(), AuctionError> {
    msg.job
        .validate()
        .map_err(|e| AuctionError::InvalidJob(e.to_string()))?;
    if msg.replicas == 0 || msg.replicas > MAX_REPLICAS {
        return Err(AuctionError::Replicas(msg.replicas));
    }
    if msg.max_price_per_replica == 0 {
        return Err(AuctionError::ZeroPrice);
    }
    if msg.max_price_per_replica > params.max_price_per_replica_limit {
        return Err(AuctionError::PriceAboveLimit {
            price: msg.max_price_per_replica,
            limit: params.max_price_per_replica_limit,
        });
    }
    if msg.bid_window_blocks == 0 || msg.bid_window_blocks > params.max_bid_window_blocks {
        return Err(AuctionError::BidWindow {
            got: msg.bid_window_blocks,
            max: params.max_bid_window_blocks,
        });
    }
    if msg.exec_deadline_blocks == 0 || msg.exec_deadline_blocks > params.max_exec_deadline_blocks {
        return Err(AuctionError::ExecDeadline {
            got: msg.exec_deadline_blocks,
            max: params.max_exec_deadline_blocks,
        });
    }
    text_ok(
        &msg.requirements.gpu_model,
        "gpu_model",
        params.max_text_len,
    )?;
    text_ok(&msg.requirements.region, "region", params.max_text_len)
}

pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &MsgPostOrder,
) -> Result<(), AuctionError> {
    let params = state.auction_params();
    check_stateless(msg, &params)?;
    let (value, fee, reserve) = order_cost(msg.replicas, msg.max_price_per_replica, &params)?;
    let total = value
        .checked_add(fee)
        .and_then(|v| v.checked_add(reserve))
        .ok_or(AuctionError::Overflow)?;
    let available = state.balance(signer);
    if available < total {
        return Err(AuctionError::InsufficientFunds {
            address: *signer,
            available,
            required: total,
        });
    }
    let bid_end_height = ctx
        .height
        .checked_add(msg.bid_window_blocks)
        .ok_or(AuctionError::Overflow)?;
    let id = state.take_id(state_key::next_order_id())?;
    move_funds(state, signer, &module_account::escrow(), total)?;
    let order = Order {
        id,
        client: *signer,
        job: msg.job.clone(),
        requirements: msg.requirements.clone(),
        replicas: msg.replicas,
        max_price_per_replica: msg.max_price_per_replica,
        exec_deadline_blocks: msg.exec_deadline_blocks,
        on_too_few_bids: msg.on_too_few_bids,
        created_height: ctx.height,
        bid_end_height,
        reopened: false,
        verification_fee: fee,
        clearing_price: None,
        escrowed: total,
        state: OrderState::Open,
        dispute_reserve: reserve,
    };
    state.put_order(&order);
    state.enqueue(state_key::clearing_queue(bid_end_height, id));
    state.emit(
        OrderPostedEvent {
            order_id: id,
            client: *signer,
            replicas: msg.replicas,
            max_price_per_replica: msg.max_price_per_replica,
            escrowed: total,
            bid_end_height,
        }
        .into(),
    );
    Ok(())
}
