//! Every ugpu of a serving order sits in `serving_escrow`, counted either in its order's
//! `deposit` or in one open claim (`amount + audit_reserve`). A claim leaves escrow once:
//! paid (the amount to the provider, the reserve to the verifiers that judged it or back to
//! the deposit) or refunded to the client whole.

use gpuchain_bank::BankWrite;
use gpuchain_staking::StakingWrite;
use gpuchain_types::{mul_ppm, Address, Amount, BlockCtx, Ppm, StateWrite};

use crate::{
    module_account::serving_escrow, Claim, ClaimWindow, ServingError, ServingKind,
    ServingLeaseState, ServingOrderState, ServingParams, ServingRead, ServingSettledEvent,
    ServingWrite,
};

/// What `units` cost at `price` per unit block, rounded down.
pub fn claim_amount(units: u128, price: Amount, kind: ServingKind) -> Option<Amount> {
    units
        .checked_mul(price)?
        .checked_div(kind.units_per_price())
}

/// The largest claim a provider bonded `bond` may make: half of what an audit threatens in
/// expectation (`audit_ppm` × the wrong-result slash of the bond). Saving the whole claim by
/// cheating is then worth less than the expected slash.
pub fn max_claim(bond: Amount, wrong_result_slash_ppm: Ppm, audit_ppm: Ppm) -> Amount {
    mul_ppm(bond, wrong_result_slash_ppm)
        .and_then(|slash| mul_ppm(slash, audit_ppm))
        .map_or(0, |threat| threat / 2)
}

/// Claims a provider's bond backs in one claim window, counted in largest claims: ten. A
/// claim is paid in the end-block after it unless audited, while a slash for a cheat it
/// hides lands only once the audit is over; without a limit, claims posted faster than
/// slashes land would be backed by the same bond many times. With ten largest claims in a
/// window (twenty across a window's boundary) the chance that one of them is audited
/// (40% at 5% each, 64% for twenty) times the wrong-result slash (30% of the bond) stays
/// above what they pay (7.5% and 15% of the bond). A claim past them is taken, so that no
/// acknowledged work goes unpaid when its order closes, but audited for sure: cheating on
/// it cannot pay.
pub const CLAIMS_PER_WINDOW: u128 = 10;

/// A claim window's length: from a claim to the latest a slash for it can land (its reveal
/// window, a jury and an appeal jury each of `max_jury_draws` verdict windows, and the
/// appeal window).
pub fn claim_window_blocks(params: &ServingParams) -> u64 {
    let draws = u64::from(params.max_jury_draws).saturating_mul(2);
    params
        .reveal_window_blocks
        .saturating_add(draws.saturating_mul(params.verdict_window_blocks))
        .saturating_add(params.appeal_window_blocks)
        .max(1)
}

/// The window `amount` is claimed in at `height` by a provider whose current window is
/// `window`, and whether the claim goes past `max_per_window` (then it is audited for sure).
pub(crate) fn claim_in_window(
    window: ClaimWindow,
    height: u64,
    amount: Amount,
    max_per_window: Amount,
    params: &ServingParams,
) -> Result<(ClaimWindow, bool), ServingError> {
    let length = claim_window_blocks(params);
    // A provider's first claim, or the first past its window, opens a window.
    let current = if window.claimed == 0 || height >= window.since.saturating_add(length) {
        ClaimWindow {
            since: height,
            claimed: 0,
        }
    } else {
        window
    };
    let claimed = current
        .claimed
        .checked_add(amount)
        .ok_or(ServingError::Overflow)?;
    let window = ClaimWindow {
        since: current.since,
        claimed,
    };
    Ok((window, claimed > max_per_window))
}

/// What a claim of `amount` reserves for an audit's fee.
pub(crate) fn audit_reserve(
    amount: Amount,
    params: &ServingParams,
) -> Result<Amount, ServingError> {
    let share = mul_ppm(amount, params.audit_fee_ppm).ok_or(ServingError::Overflow)?;
    Ok(share.max(params.min_audit_fee))
}

/// Moves `amount` unless it is zero (the bank refuses zero transfers).
pub(crate) fn move_funds(
    state: &mut impl StateWrite,
    from: &Address,
    to: &Address,
    amount: Amount,
) -> Result<(), ServingError> {
    if amount > 0 {
        state.transfer(from, to, amount)?;
    }
    Ok(())
}

/// Splits `fee` from escrow over `verifiers`, the rounding remainder to the first.
pub(crate) fn pay_verifiers(
    state: &mut impl StateWrite,
    verifiers: &[Address],
    fee: Amount,
) -> Result<(), ServingError> {
    let n = u128::try_from(verifiers.len()).map_err(|_| ServingError::Overflow)?;
    let Some(share) = fee.checked_div(n) else {
        return Ok(());
    };
    let paid = share.checked_mul(n).ok_or(ServingError::Overflow)?;
    let remainder = fee.checked_sub(paid).ok_or(ServingError::Overflow)?;
    for (i, verifier) in verifiers.iter().enumerate() {
        let extra = if i == 0 { remainder } else { 0 };
        let amount = share.checked_add(extra).ok_or(ServingError::Overflow)?;
        move_funds(state, &serving_escrow(), verifier, amount)?;
    }
    Ok(())
}

/// How a claim leaves escrow.
pub(crate) enum Settlement<'a> {
    /// The provider is paid; the reserve goes to these verifiers, or back to the deposit
    /// when nobody judged the claim.
    Pay {
        /// Verifiers on the standing `honest` side.
        judges: &'a [Address],
        /// `unaudited`, `honest` or `no_verdict`.
        outcome: &'static str,
    },
    /// The client gets the amount and the reserve back (`faulty` or `withheld`).
    Refund {
        /// Why.
        outcome: &'static str,
    },
}

/// Settles `claim` and deletes it; updates its lease and, when the lease is closed and this
/// was its last claim, the provider's open-lease count.
pub(crate) fn settle_claim(
    state: &mut impl StateWrite,
    claim: &Claim,
    how: Settlement<'_>,
) -> Result<(), ServingError> {
    let mut lease = state
        .serving_lease(claim.lease_id)
        .ok_or(ServingError::UnknownLease(claim.lease_id))?;
    let mut order = state
        .serving_order(lease.order_id)
        .ok_or(ServingError::UnknownOrder(lease.order_id))?;
    let escrow = serving_escrow();
    let (paid, refunded, outcome) = match how {
        Settlement::Pay { judges, outcome } => {
            move_funds(state, &escrow, &lease.provider, claim.amount)?;
            if !judges.is_empty() {
                pay_verifiers(state, judges, claim.audit_reserve)?;
            } else if order.state == ServingOrderState::Closed {
                move_funds(state, &escrow, &order.client, claim.audit_reserve)?;
            } else {
                order.deposit = order
                    .deposit
                    .checked_add(claim.audit_reserve)
                    .ok_or(ServingError::Overflow)?;
                state.put_serving_order(&order);
            }
            lease.paid = lease
                .paid
                .checked_add(claim.amount)
                .ok_or(ServingError::Overflow)?;
            (claim.amount, 0, outcome)
        }
        Settlement::Refund { outcome } => {
            let whole = claim
                .amount
                .checked_add(claim.audit_reserve)
                .ok_or(ServingError::Overflow)?;
            move_funds(state, &escrow, &order.client, whole)?;
            (0, whole, outcome)
        }
    };
    lease.open_claims = lease
        .open_claims
        .checked_sub(1)
        .ok_or(ServingError::Overflow)?;
    if lease.state == ServingLeaseState::Closed && lease.open_claims == 0 {
        state.decrement_open_leases(&lease.provider)?;
    }
    state.put_serving_lease(&lease);
    state.delete_serving_claim(claim.id);
    state.emit(
        ServingSettledEvent {
            claim_id: claim.id,
            lease_id: lease.id,
            provider: lease.provider,
            client: lease.client,
            paid,
            refunded,
            outcome: outcome.into(),
        }
        .into(),
    );
    Ok(())
}

/// Takes a lease from its provider: it serves no more (claims for what it served are still
/// taken until the order closes).
pub(crate) fn drop_lease(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    lease_id: u64,
    reason: &'static str,
) -> Result<(), ServingError> {
    let mut lease = state
        .serving_lease(lease_id)
        .ok_or(ServingError::UnknownLease(lease_id))?;
    if lease.state != ServingLeaseState::Serving {
        return Ok(());
    }
    lease.state = ServingLeaseState::Dropped;
    lease.end_height = lease.end_height.min(ctx.height);
    lease.report_deadline = None;
    state.put_serving_lease(&lease);
    state.emit(
        crate::ServingDroppedEvent {
            lease_id,
            provider: lease.provider,
            reason: reason.into(),
        }
        .into(),
    );
    Ok(())
}
