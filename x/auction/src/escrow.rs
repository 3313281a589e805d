//! Escrow: every ugpu a client commits sits in the `escrow` module account and is counted in
//! exactly one order's `escrowed` until it is paid or refunded. At posting the order locks
//! `k × max_price + fee` where `fee = verification_fee_ppm × k × max_price`; at clearing the
//! fee goes to the verification pool and `k × (max_price − clearing_price)` back to the
//! client; each lease's `price` then leaves escrow once, either to the provider (after
//! acceptance and the challenge window: its verification charge to the verification pool,
//! then of the rest `rest − take + bonus` to the provider and `take − bonus` to the fee pool)
//! or back to the client (missed, faulted, unresolved).

use gpuchain_bank::module_account::fee_pool;
use gpuchain_bank::{BankRead, BankWrite};
use gpuchain_reputation::ReputationRead;
use gpuchain_staking::StakingRead;
use gpuchain_types::{mul_ppm, Address, Amount, BlockCtx, StateRead, StateWrite};

use crate::{
    module_account, AuctionError, AuctionParams, AuctionRead, Lease, LeasePaidEvent, Order,
    RefundEvent,
};

/// Moves `amount` unless it is zero (the bank refuses zero transfers).
pub(crate) fn move_funds(
    state: &mut impl StateWrite,
    from: &Address,
    to: &Address,
    amount: Amount,
) -> Result<(), AuctionError> {
    if amount > 0 {
        state.transfer(from, to, amount)?;
    }
    Ok(())
}

/// The funds an order locks: `(value, verification fee, dispute reserve)` with value
/// `k × max_price`.
pub fn order_cost(
    replicas: u32,
    max_price: Amount,
    params: &AuctionParams,
) -> Result<(Amount, Amount, Amount), AuctionError> {
    let value = max_price
        .checked_mul(u128::from(replicas))
        .ok_or(AuctionError::Overflow)?;
    let fee = mul_ppm(value, params.verification_fee_ppm).ok_or(AuctionError::Overflow)?;
    let reserve = dispute_reserve(replicas, max_price, params)?;
    value
        .checked_add(fee)
        .and_then(|v| v.checked_add(reserve))
        .ok_or(AuctionError::Overflow)?;
    Ok((value, fee, reserve))
}

/// What an order of `replicas` at `price` holds for a dispute: one audit fee per replica
/// when there are at least two (a lone replica cannot be disputed).
pub fn dispute_reserve(
    replicas: u32,
    price: Amount,
    params: &AuctionParams,
) -> Result<Amount, AuctionError> {
    if replicas < 2 {
        return Ok(0);
    }
    crate::audit::audit_fee(price, params)
        .checked_mul(u128::from(replicas))
        .ok_or(AuctionError::Overflow)
}

/// Returns `amount` of `order`'s escrow to its client and lowers its obligation. The caller
/// stores the order.
pub(crate) fn refund(
    state: &mut impl StateWrite,
    order: &mut Order,
    amount: Amount,
    reason: &'static str,
) -> Result<(), AuctionError> {
    order.escrowed = order
        .escrowed
        .checked_sub(amount)
        .ok_or(AuctionError::Overflow)?;
    move_funds(state, &module_account::escrow(), &order.client, amount)?;
    if amount > 0 {
        state.emit(
            RefundEvent {
                order_id: order.id,
                client: order.client,
                amount,
                reason: reason.into(),
            }
            .into(),
        );
    }
    Ok(())
}

/// Whether `provider` has a clean record at `height`: registered and free of faults and
/// missed deadlines for `clean_service_blocks`.
pub fn is_loyal(state: &impl StateRead, provider: &Address, height: u64, clean: u64) -> bool {
    let Some(p) = state.provider(provider) else {
        return false;
    };
    let Some(since) = height.checked_sub(clean) else {
        return false;
    };
    p.registered_height <= since
        && state
            .reputation(provider)
            .last_bad_height
            .is_none_or(|bad| bad < since)
}

/// Pays `lease.price` out of `order`'s escrow: the lease's verification charge to the
/// verification pool, the take rate of the rest to the fee pool, and the rest plus any
/// loyalty bonus (taken out of the take) to the provider. The caller stores the order.
pub(crate) fn pay(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    order: &mut Order,
    lease: &Lease,
) -> Result<(), AuctionError> {
    let params = state.auction_params();
    let verification = lease.verification_charge.min(lease.price);
    let rest = lease.price.saturating_sub(verification);
    let take = mul_ppm(rest, params.take_rate_ppm).ok_or(AuctionError::Overflow)?;
    let bonus = if is_loyal(
        state,
        &lease.provider,
        ctx.height,
        params.clean_service_blocks,
    ) {
        mul_ppm(rest, params.loyalty_bonus_ppm)
            .ok_or(AuctionError::Overflow)?
            .min(take)
    } else {
        0
    };
    let to_pool = take.checked_sub(bonus).ok_or(AuctionError::Overflow)?;
    let to_provider = rest.checked_sub(to_pool).ok_or(AuctionError::Overflow)?;
    order.escrowed = order
        .escrowed
        .checked_sub(lease.price)
        .ok_or(AuctionError::Overflow)?;
    let escrow = module_account::escrow();
    move_funds(state, &escrow, &lease.provider, to_provider)?;
    move_funds(state, &escrow, &fee_pool(), to_pool)?;
    move_funds(
        state,
        &escrow,
        &module_account::verification_pool(),
        verification,
    )?;
    state.emit(
        LeasePaidEvent {
            lease_id: lease.id,
            order_id: order.id,
            provider: lease.provider,
            client: order.client,
            amount: to_provider,
            take: to_pool,
            bonus,
            verification,
        }
        .into(),
    );
    Ok(())
}

/// Checks the module's accounting: the escrow account holds exactly the open obligations
/// and the rewards pool exactly the accrued rewards. For tests and simulations, not for an
/// on-chain check.
pub fn check_invariants(state: &impl StateRead) -> Result<(), String> {
    let obligations = state
        .escrow_obligations()
        .ok_or("obligations overflow u128")?;
    let escrow = state.balance(&module_account::escrow());
    if escrow != obligations {
        return Err(format!(
            "escrow holds {escrow} ugpu, open obligations are {obligations} ugpu"
        ));
    }
    let accrued = state
        .rewards()
        .iter()
        .try_fold(0u128, |acc, (_, a)| acc.checked_add(*a))
        .ok_or("rewards overflow u128")?;
    let pool = state.balance(&module_account::rewards_pool());
    if pool != accrued {
        return Err(format!(
            "rewards pool holds {pool} ugpu, accrued rewards are {accrued} ugpu"
        ));
    }
    Ok(())
}
