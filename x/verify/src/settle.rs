//! Ending a case: slashing verifiers, paying audit fees, returning or forfeiting the
//! appeal deposit, and applying the standing verdict to the lease through the auction.

use gpuchain_auction::settlement::{
    apply_verdict, audit_fee, availability_fee, verification_pool, wrong_result_slash, Verdict,
};
use gpuchain_auction::{AuctionParams, AuctionRead, Lease, LeaseState};
use gpuchain_bank::{BankRead, BankWrite};
use gpuchain_types::{mul_ppm, Address, Amount, BlockCtx, Ppm, StateRead, StateWrite};

use crate::{
    module_account, state_key, AuditFeeOwedEvent, AuditFeePaidEvent, Case, CaseOutcome,
    CaseSettledEvent, CaseStage, OwedFee, VerdictKind, VerifierSlashedEvent, VerifyError,
    VerifyRead, VerifyWrite,
};

/// Moves `amount` unless it is zero (the bank refuses zero transfers).
pub(crate) fn move_funds(
    state: &mut impl StateWrite,
    from: &Address,
    to: &Address,
    amount: Amount,
) -> Result<(), VerifyError> {
    if amount > 0 {
        state.transfer(from, to, amount)?;
    }
    Ok(())
}

/// Why a verifier is slashed.
#[derive(Clone, Copy)]
pub(crate) enum Offence {
    /// No verdict by the deadline.
    Missed,
    /// A verdict that did not stand; `Some(appellant)` gets the harmed share.
    Wrong(Option<Address>),
}

/// Takes the offence's ppm of `verifier`'s bond (the harmed share to the appellant, the
/// rest to the verification pool), jails it and counts the offence; what went to the pool.
pub(crate) fn slash_verifier(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    verifier: &Address,
    offence: Offence,
    lease_id: u64,
) -> Result<Amount, VerifyError> {
    let params = state.verify_params();
    let mut record = state
        .verifier(verifier)
        .ok_or(VerifyError::NotAVerifier(*verifier))?;
    let (ppm, harmed, reason): (Ppm, Option<Address>, &'static str) = match offence {
        Offence::Missed => (params.verifier_miss_slash_ppm, None, "missed_deadline"),
        Offence::Wrong(harmed) => (params.verifier_wrong_slash_ppm, harmed, "wrong_verdict"),
    };
    let amount = mul_ppm(record.bonded, ppm).ok_or(VerifyError::Overflow)?;
    let to_harmed = match harmed {
        Some(_) => {
            mul_ppm(amount, params.wrong_slash_harmed_share_ppm).ok_or(VerifyError::Overflow)?
        }
        None => 0,
    };
    let to_pool = amount.checked_sub(to_harmed).ok_or(VerifyError::Overflow)?;
    let until = ctx
        .height
        .checked_add(params.verifier_jail_blocks)
        .ok_or(VerifyError::Overflow)?;
    record.bonded = record
        .bonded
        .checked_sub(amount)
        .ok_or(VerifyError::Overflow)?;
    record.jailed_until = record.jailed_until.max(until);
    match offence {
        Offence::Missed => record.misses = record.misses.saturating_add(1),
        Offence::Wrong(_) => record.overturned = record.overturned.saturating_add(1),
    }
    let bonded = module_account::verify_bonded();
    if let Some(h) = harmed {
        move_funds(state, &bonded, &h, to_harmed)?;
    }
    move_funds(state, &bonded, &verification_pool(), to_pool)?;
    state.put_verifier(&record);
    state.emit(
        VerifierSlashedEvent {
            verifier: *verifier,
            lease_id,
            reason: reason.into(),
            amount,
            jailed_until: record.jailed_until,
        }
        .into(),
    );
    Ok(to_pool)
}

/// Lowers a verifier's open-case count (its part in a case is over).
pub(crate) fn release(state: &mut impl StateWrite, verifier: &Address) {
    if let Some(mut record) = state.verifier(verifier) {
        record.open_cases = record.open_cases.saturating_sub(1);
        state.put_verifier(&record);
    }
}

/// Ends `case` with `standing` (None: no verdict; the auction's fallback applies) and stores
/// it. See the crate docs for the rule.
pub(crate) fn settle(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    case: &mut Case,
    standing: Option<VerdictKind>,
) -> Result<(), VerifyError> {
    let first = case.verdicts.first().map(|v| v.verdict);
    let overturned = standing.is_some() && first.is_some() && standing != first;
    let mut standing_side = Vec::new();
    let mut slashed_into_pool: Amount = 0;
    for (i, posted) in case.verdicts.clone().iter().enumerate() {
        release(state, &posted.verifier);
        let Some(s) = standing else { continue };
        if posted.verdict == s {
            standing_side.push(posted.verifier);
        } else {
            let harmed = if i == 0 && overturned {
                case.appellant
            } else {
                None
            };
            let to_pool = slash_verifier(
                state,
                ctx,
                &posted.verifier,
                Offence::Wrong(harmed),
                case.lease_id,
            )?;
            slashed_into_pool = slashed_into_pool
                .checked_add(to_pool)
                .ok_or(VerifyError::Overflow)?;
        }
    }
    if let Some(appellant) = case.appellant {
        let forfeit = standing.is_some() && !overturned && case.verdicts.len() >= 2;
        let to = if forfeit {
            verification_pool()
        } else {
            appellant
        };
        move_funds(state, &module_account::verify_appeals(), &to, case.deposit)?;
    }
    let open_lease = state
        .lease(case.lease_id)
        .filter(|l| l.state.takes_verdict());
    if let (Some(s), Some(lease)) = (standing, open_lease) {
        let fee = case_fee(&lease, &state.auction_params());
        let (verdict, fee) = match s {
            // A ringer's case exists whether or not an audit was drawn, and the lease paid
            // only the audit's chance of its fee: the jurors who overturned the ringer's
            // owner are paid out of what its slash put into the pool, never more.
            VerdictKind::Honest if case.challenge_id.is_some() => {
                (Verdict::Honest, fee.min(slashed_into_pool))
            }
            // Funded by the verification charges every judged lease pays.
            VerdictKind::Honest => (Verdict::Honest, fee),
            // Paid back to the pool out of the slash, so never more than the slash.
            VerdictKind::Faulty => {
                let fee = fee.min(wrong_result_slash(state, &lease.provider));
                let prover = standing_side.first().copied();
                (Verdict::Faulty { prover, costs: fee }, fee)
            }
        };
        // A replica of the same result with a case of its own still open (appealing its own
        // ringer case) is settled by that case, not by this one's verdict.
        let spared: Vec<u64> = state
            .leases_of_order(case.order_id)
            .iter()
            .map(|l| l.id)
            .filter(|id| {
                *id != case.lease_id
                    && state
                        .case(*id)
                        .is_some_and(|c| c.stage != CaseStage::Closed)
            })
            .collect();
        apply_verdict(state, ctx, case.lease_id, verdict, &spared)?;
        pay_fee(state, ctx.height, case.lease_id, &standing_side, fee)?;
    }
    case.stage = CaseStage::Closed;
    crate::retire::schedule_case(state, ctx, case.lease_id);
    case.assignee = None;
    case.outcome = match standing {
        Some(s) => CaseOutcome::Settled(s),
        None => CaseOutcome::NoVerdict,
    };
    state.put_case(case);
    state.emit(
        CaseSettledEvent {
            lease_id: case.lease_id,
            verdict: standing.map_or("none", |s| s.name()).into(),
            overturned,
        }
        .into(),
    );
    Ok(())
}

/// The fee of a case about `lease`: an availability check only fetched the output; a
/// re-execution earns the audit fee.
pub fn case_fee(lease: &Lease, params: &AuctionParams) -> Amount {
    if lease.state == LeaseState::AvailabilityPending {
        availability_fee(lease.price, params)
    } else {
        audit_fee(lease.price, params)
    }
}

/// Pays one audit fee for a case, in equal parts to the verifiers whose verdict stood (the
/// first takes the rounding). What the pool cannot pay now is owed ([`pool_pay`]).
fn pay_fee(
    state: &mut impl StateWrite,
    height: u64,
    lease_id: u64,
    verifiers: &[Address],
    fee: Amount,
) -> Result<(), VerifyError> {
    let Ok(n) = u128::try_from(verifiers.len()) else {
        return Ok(());
    };
    if n == 0 {
        return Ok(());
    }
    let part = fee.checked_div(n).ok_or(VerifyError::Overflow)?;
    // The first verifier also gets the remainder, so the parts add up to the fee.
    let first = part
        .checked_mul(n.saturating_sub(1))
        .and_then(|others| fee.checked_sub(others))
        .ok_or(VerifyError::Overflow)?;
    for (i, verifier) in verifiers.iter().enumerate() {
        let due = if i == 0 { first } else { part };
        let paid = pool_pay(state, height, lease_id, verifier, due)?;
        let owed = due.checked_sub(paid).ok_or(VerifyError::Overflow)?;
        if owed > 0 {
            let id = state.take_verify_id(state_key::next_owed_fee_id())?;
            state.put_owed_fee(&OwedFee {
                id,
                lease_id,
                verifier: *verifier,
                amount: owed,
            });
            state.emit(
                AuditFeeOwedEvent {
                    lease_id,
                    verifier: *verifier,
                    amount: owed,
                }
                .into(),
            );
        }
    }
    Ok(())
}

/// What the verification pool may still pay verifiers at `height`: `max_pool_outflow_ppm`
/// of what it held when the block's payouts began (its balance plus what it paid at this
/// height), less what it paid, and never more than its balance.
pub(crate) fn pool_budget(state: &impl StateRead, height: u64) -> Amount {
    let paid = state.pool_outflow_at(height);
    let balance = state.balance(&verification_pool());
    let cap = mul_ppm(
        balance.saturating_add(paid),
        state.verify_params().max_pool_outflow_ppm,
    )
    .unwrap_or(Amount::MAX);
    cap.saturating_sub(paid).min(balance)
}

/// Pays `verifier` up to `due` from the verification pool within this block's budget;
/// returns what it paid.
fn pool_pay(
    state: &mut impl StateWrite,
    height: u64,
    lease_id: u64,
    verifier: &Address,
    due: Amount,
) -> Result<Amount, VerifyError> {
    let pay = due.min(pool_budget(state, height));
    if pay == 0 {
        return Ok(0);
    }
    move_funds(state, &verification_pool(), verifier, pay)?;
    let paid = state
        .pool_outflow_at(height)
        .checked_add(pay)
        .ok_or(VerifyError::Overflow)?;
    state.put_pool_outflow(height, paid);
    state.emit(
        AuditFeePaidEvent {
            lease_id,
            verifier: *verifier,
            amount: pay,
        }
        .into(),
    );
    Ok(pay)
}

/// Pays owed fees, oldest first, within this block's budget.
pub(crate) fn pay_owed_fees(state: &mut impl StateWrite, height: u64) -> Result<(), VerifyError> {
    for mut fee in state.owed_fees() {
        if pool_budget(state, height) == 0 {
            break;
        }
        let paid = pool_pay(state, height, fee.lease_id, &fee.verifier, fee.amount)?;
        fee.amount = fee.amount.checked_sub(paid).ok_or(VerifyError::Overflow)?;
        state.put_owed_fee(&fee);
    }
    Ok(())
}
