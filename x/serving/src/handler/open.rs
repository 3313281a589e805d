use gpuchain_bank::BankWrite;
use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::{
    module_account::serving_escrow, MsgOpenServing, ServingError, ServingOrder,
    ServingOrderOpenedEvent, ServingOrderState, ServingParams, ServingRead, ServingWrite, Timer,
    MAX_MODEL_NAME_BYTES, MAX_REGION_BYTES,
};

pub(super) fn check(m: &MsgOpenServing, params: &ServingParams) -> Result<(), ServingError> {
    let bad = |what: String| Err(ServingError::InvalidOrder(what));
    let name = &m.model.name;
    if name.is_empty() || name.len() > MAX_MODEL_NAME_BYTES || name.chars().any(char::is_control) {
        return bad(format!(
            "model name must be 1 to {MAX_MODEL_NAME_BYTES} bytes without control characters"
        ));
    }
    if m.providers == 0 || m.providers > params.max_providers {
        return bad(format!("providers must be 1..={}", params.max_providers));
    }
    if m.duration_blocks < params.min_duration_blocks
        || m.duration_blocks > params.max_duration_blocks
    {
        return bad(format!(
            "duration must be {}..={} blocks",
            params.min_duration_blocks, params.max_duration_blocks
        ));
    }
    if m.bid_window_blocks == 0 || m.bid_window_blocks > params.max_bid_window_blocks {
        return bad(format!(
            "bid window must be 1..={} blocks",
            params.max_bid_window_blocks
        ));
    }
    if m.max_price == 0 {
        return Err(ServingError::ZeroPrice);
    }
    if m.deposit < params.min_deposit {
        return bad(format!(
            "deposit must be at least {} ugpu",
            params.min_deposit
        ));
    }
    if m.region
        .as_ref()
        .is_some_and(|r| r.is_empty() || r.len() > MAX_REGION_BYTES)
    {
        return bad(format!("region must be 1 to {MAX_REGION_BYTES} bytes"));
    }
    Ok(())
}

pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    m: &MsgOpenServing,
) -> Result<(), ServingError> {
    check(m, &state.serving_params())?;
    // A guard for the client (a verifier may withdraw its declaration later, and a claim
    // nobody can be drawn to judge is paid with no verdict); clearing checks each winner.
    if !crate::audit::judged_for(state, ctx.height, &m.model.blake3, &[*signer]) {
        return Err(ServingError::NoJudge(crate::msgs::hex_list::hex_string(
            &m.model.blake3,
        )));
    }
    state.transfer(signer, &serving_escrow(), m.deposit)?;
    let bid_end_height = ctx
        .height
        .checked_add(m.bid_window_blocks)
        .ok_or(ServingError::Overflow)?;
    let order = ServingOrder {
        id: state.next_serving_id("order")?,
        client: *signer,
        model: m.model.clone(),
        providers: m.providers,
        max_price: m.max_price,
        duration_blocks: m.duration_blocks,
        region: m.region.clone(),
        bid_end_height,
        deposit: m.deposit,
        state: ServingOrderState::Bidding,
        price: 0,
        end_height: 0,
        close_height: 0,
        leases: Vec::new(),
    };
    state.set_serving_timer(bid_end_height, Timer::Clear(order.id));
    state.put_serving_order(&order);
    state.emit(
        ServingOrderOpenedEvent {
            order_id: order.id,
            client: *signer,
            model: order.model.name.clone(),
            kind: order.model.kind.name().into(),
            providers: order.providers,
            max_price: order.max_price,
            deposit: order.deposit,
            bid_end_height,
        }
        .into(),
    );
    Ok(())
}
