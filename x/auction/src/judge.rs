//! Verification, first part: result commit-reveal, comparison, acceptance, disputes and
//! audit sampling.
//!
//! A provider commits `blake3(result_hash ‖ provider address (20 bytes) ‖ salt)` by the
//! lease deadline and reveals after every replica has committed or the deadline has passed,
//! within `reveal_window_blocks`. When no replica of the order is left to reveal, the revealed
//! results are judged. Replicas that revealed different bytes go to `Comparing`: each
//! provider fetches the others' outputs and states whether they are within the job's
//! tolerance of its own (`CompareReplicas`, within `compare_window_blocks`). A "no", or
//! silence, puts every compared lease in `Disputed`, whose verification the client's dispute
//! reserve pays. Results that agree (one result, equal ones, or ones every provider found
//! within tolerance) are each drawn for audit with their own probability [`audit_chance`]
//! (reputation's rate raised to the deterrence floor) as `u64::from_be_bytes(first 8 bytes
//! of BlockCtx::draw("verify/audit", lease id (8 bytes big-endian) ‖ commitment)) mod 10^6
//! < p`; equal results form a group, audited when any of its leases is drawn (the first
//! drawn waits in `AuditPending`, the others follow it), else accepted. The draw uses the hash of
//! the block in which the results are judged, which no provider knows when it reveals or
//! compares. [`apply_verdict`] is the hook for the verifier module: it settles
//! `AuditPending`, `Disputed`, their followers and (within the challenge window) `Accepted`
//! leases. Without a verdict by `verdict_window_blocks`, an audit falls back to acceptance
//! and a dispute to a refund without any slash.

use gpuchain_bank::BankRead;
use gpuchain_reputation::{Outcome, ReputationRead, ReputationWrite};
use gpuchain_slashing::{slash_provider, FaultCosts, FaultKind, SlashingRead};
use gpuchain_staking::{StakingRead, StakingWrite};
use gpuchain_types::{Address, Amount, BlockCtx, Ppm, StateRead, StateWrite};

use crate::audit::{
    any_of, audit_chance, audit_drawn, audit_fee, availability_fee, penalty_per_lease,
    verification_charge, wrong_result_slash_of,
};
use crate::escrow::{move_funds, pay, refund};
use crate::{
    module_account, state_key, AuctionError, AuctionRead, AuctionWrite, AuditSampledEvent, Lease,
    LeaseState, LeaseStateEvent, Order, OrderSettledEvent, OrderState, RefundEvent,
    ReplicasComparedEvent,
};

/// A verifier's finding about a lease's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The result is within tolerance: accept (payout after the challenge window).
    Honest,
    /// The result is wrong: slash, refund the client, reward `prover`.
    Faulty {
        /// Who proved it.
        prover: Option<Address>,
        /// What proving it cost the verification pool: paid back out of the slash first.
        costs: Amount,
    },
}

/// The commitment a provider posts: blake3(result_hash ‖ provider ‖ salt).
pub fn commitment(result_hash: &[u8; 32], provider: &Address, salt: &[u8; 32]) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    hasher.update(result_hash);
    hasher.update(&provider.0);
    hasher.update(salt);
    *hasher.finalize().as_bytes()
}

fn set_state(state: &mut impl StateWrite, lease: &mut Lease, new: LeaseState) {
    let was_pending = lease.state.is_verdict_pending();
    lease.state = new;
    state.put_lease(lease);
    if new.is_verdict_pending() {
        state.enqueue(state_key::verdict_pending(lease.id));
    } else if was_pending {
        state.delete(state_key::verdict_pending(lease.id));
    }
    state.emit(
        LeaseStateEvent {
            lease_id: lease.id,
            order_id: lease.order_id,
            provider: lease.provider,
            client: lease.client,
            state: new.name().into(),
        }
        .into(),
    );
}

/// Accepts a result: payment at `height + challenge_window_blocks`.
pub(crate) fn accept(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    lease: &mut Lease,
) -> Result<(), AuctionError> {
    let window = state.auction_params().challenge_window_blocks;
    let at = ctx
        .height
        .checked_add(window)
        .ok_or(AuctionError::Overflow)?;
    lease.payout_height = Some(at);
    lease.verdict_deadline_height = None;
    state.enqueue(state_key::lease_timer(at, lease.id));
    set_state(state, lease, LeaseState::Accepted);
    Ok(())
}

fn await_verdict(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    lease: &mut Lease,
    new: LeaseState,
) -> Result<(), AuctionError> {
    let window = state.auction_params().verdict_window_blocks;
    let at = ctx
        .height
        .checked_add(window)
        .ok_or(AuctionError::Overflow)?;
    lease.verdict_deadline_height = Some(at);
    state.enqueue(state_key::lease_timer(at, lease.id));
    set_state(state, lease, new);
    Ok(())
}

/// The audit probability of `lease`'s result now: its provider's reputation, price and the
/// bond behind each of its open leases.
pub fn lease_audit_chance(state: &impl StateRead, ctx: &BlockCtx, lease: &Lease) -> Ppm {
    let bond = state.provider(&lease.provider).map_or(0, |p| p.bonded);
    let penalty = penalty_per_lease(
        bond,
        state.open_leases(&lease.provider),
        &state.slashing_params(),
    );
    audit_chance(
        state.score(&lease.provider, ctx.height),
        lease.price,
        penalty,
        &state.auction_params(),
    )
}

/// The wrong-result slash `provider`'s bond would pay now.
pub fn wrong_result_slash(state: &impl StateRead, provider: &Address) -> Amount {
    let bond = state.provider(provider).map_or(0, |p| p.bonded);
    wrong_result_slash_of(bond, &state.slashing_params())
}

/// Judges an order's revealed results once none of its leases can still commit or reveal.
/// Equal results are judged as agreeing; different bytes first go to the providers'
/// comparison.
pub(crate) fn judge_order(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    order_id: u64,
) -> Result<(), AuctionError> {
    let leases = state.leases_of_order(order_id);
    if leases
        .iter()
        .any(|l| matches!(l.state, LeaseState::Open | LeaseState::Committed))
    {
        return Ok(());
    }
    let mut revealed: Vec<Lease> = leases
        .into_iter()
        .filter(|l| l.state == LeaseState::Revealed)
        .collect();
    let first = revealed.first().and_then(|l| l.result_hash);
    if revealed.iter().all(|l| l.result_hash == first) {
        return judge_agreeing(state, ctx, order_id, revealed);
    }
    // Honest replicas on different backends differ in the last bits: each provider, who has
    // its own output, compares the others' under the job's tolerance before anyone pays for
    // a re-execution.
    let window = state.auction_params().compare_window_blocks;
    let at = ctx
        .height
        .checked_add(window)
        .ok_or(AuctionError::Overflow)?;
    for lease in &mut revealed {
        lease.verdict_deadline_height = Some(at);
        state.enqueue(state_key::lease_timer(at, lease.id));
        set_state(state, lease, LeaseState::Comparing);
    }
    Ok(())
}

/// Records what the provider of a `Comparing` lease stated. A "no" disputes the order at
/// once; the last "yes" judges the results as agreeing.
pub(crate) fn record_comparison(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    lease: &Lease,
    consistent: bool,
) -> Result<(), AuctionError> {
    state.put_comparison(lease.id, Some(consistent));
    state.emit(
        ReplicasComparedEvent {
            lease_id: lease.id,
            order_id: lease.order_id,
            provider: lease.provider,
            consistent,
        }
        .into(),
    );
    let comparing = comparing_leases(state, lease.order_id);
    if !consistent {
        return dispute(state, ctx, lease.order_id, comparing);
    }
    if comparing
        .iter()
        .all(|l| state.comparison(l.id) == Some(true))
    {
        forget_comparisons(state, &comparing);
        // Each provider fetched every other replica's output to compare it with its own.
        let fetched = comparing
            .into_iter()
            .map(|l| Lease { fetched: true, ..l })
            .collect();
        return judge_agreeing(state, ctx, lease.order_id, fetched);
    }
    Ok(())
}

/// The comparison window of `order_id` closed with a statement missing: the order is
/// disputed.
pub(crate) fn close_comparison(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    order_id: u64,
) -> Result<(), AuctionError> {
    let comparing = comparing_leases(state, order_id);
    dispute(state, ctx, order_id, comparing)
}

fn comparing_leases(state: &impl StateRead, order_id: u64) -> Vec<Lease> {
    state
        .leases_of_order(order_id)
        .into_iter()
        .filter(|l| l.state == LeaseState::Comparing)
        .collect()
}

fn forget_comparisons(state: &mut impl StateWrite, leases: &[Lease]) {
    for lease in leases {
        state.put_comparison(lease.id, None);
    }
}

/// Every lease of a real disagreement is verified: the client's dispute reserve pays for
/// it, and whatever the reserve cannot cover is charged to the lease.
fn dispute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    order_id: u64,
    mut leases: Vec<Lease>,
) -> Result<(), AuctionError> {
    forget_comparisons(state, &leases);
    let params = state.auction_params();
    let mut order = state
        .order(order_id)
        .ok_or(AuctionError::UnknownOrder(order_id))?;
    let mut spent: Amount = 0;
    for lease in &mut leases {
        let fee = audit_fee(lease.price, &params);
        let covered = fee.min(order.dispute_reserve.saturating_sub(spent));
        spent = spent.checked_add(covered).ok_or(AuctionError::Overflow)?;
        lease.verification_charge = fee.saturating_sub(covered);
        await_verdict(state, ctx, lease, LeaseState::Disputed)?;
    }
    spend_reserve(state, &mut order, spent)?;
    state.put_order(&order);
    Ok(())
}

/// Judges results that agree: byte-equal, or found within tolerance of each other by every
/// provider. Equal results stand or fall together: each group of leases with one result is
/// audited when any of its leases is drawn with its own audit chance; the first drawn lease
/// waits for a verdict (`AuditPending`) and the rest of its group follow it
/// (`AuditFollowing`). A group with other bytes has its own draw, so a result that only
/// looked close meets the same deterrence as a lone one and never takes another result's
/// verdict. Each lease is charged its share of its group's fee at the group's chance.
fn judge_agreeing(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    order_id: u64,
    leases: Vec<Lease>,
) -> Result<(), AuctionError> {
    let mut hashes: Vec<Option<[u8; 32]>> = leases.iter().map(|l| l.result_hash).collect();
    hashes.sort_unstable();
    hashes.dedup();
    for hash in hashes {
        let group: Vec<Lease> = leases
            .iter()
            .filter(|l| l.result_hash == hash)
            .cloned()
            .collect();
        judge_group(state, ctx, order_id, group)?;
    }
    Ok(())
}

/// One group of leases with equal results: see [`judge_agreeing`].
fn judge_group(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    order_id: u64,
    mut leases: Vec<Lease>,
) -> Result<(), AuctionError> {
    let params = state.auction_params();
    let chances: Vec<Ppm> = leases
        .iter()
        .map(|lease| lease_audit_chance(state, ctx, lease))
        .collect();
    let group = any_of(&chances);
    let members = u128::try_from(leases.len()).map_err(|_| AuctionError::Overflow)?;
    for lease in &mut leases {
        lease.verification_charge =
            verification_charge(lease.price, group, &params).div_ceil(members);
    }
    let drawn = leases
        .iter()
        .zip(&chances)
        .position(|(lease, p)| audit_drawn(ctx, lease, *p));
    for (i, (lease, p)) in leases.iter_mut().zip(chances).enumerate() {
        match drawn {
            Some(d) if d == i => {
                state.emit(
                    AuditSampledEvent {
                        lease_id: lease.id,
                        order_id,
                        provider: lease.provider,
                        probability_ppm: p,
                    }
                    .into(),
                );
                await_verdict(state, ctx, lease, LeaseState::AuditPending)?;
            }
            Some(_) => set_state(state, lease, LeaseState::AuditFollowing),
            None => accept(state, ctx, lease)?,
        }
    }
    Ok(())
}

/// Gives `verdict` to the replicas that agreed with `audited` and wait on its audit, but
/// those in `spared`: leases the verification module is judging on their own (a replica
/// appealing its own ringer case), which their own verdict settles.
fn settle_followers(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    audited: &Lease,
    verdict: Option<Verdict>,
    spared: &[u64],
) -> Result<(), AuctionError> {
    for mut follower in state.leases_of_order(audited.order_id) {
        if spared.contains(&follower.id) {
            continue;
        }
        // A faulty verdict also reaches an agreeing replica already accepted (one whose own
        // hold ran out): it is the same result.
        let waiting = follower.state == LeaseState::AuditFollowing
            || (follower.state == LeaseState::Accepted
                && matches!(verdict, Some(Verdict::Faulty { .. })));
        if follower.id == audited.id || !waiting || follower.result_hash != audited.result_hash {
            continue;
        }
        match verdict {
            Some(Verdict::Honest) => {
                // The verifier fetched these very bytes (one hash) to re-run them.
                follower.fetched = true;
                state.record_outcome(
                    &follower.provider,
                    ctx.height,
                    Outcome::ChallengePassed,
                    follower.price,
                )?;
                accept(state, ctx, &mut follower)?;
            }
            None => accept(state, ctx, &mut follower)?,
            Some(Verdict::Faulty { prover, .. }) => finish(
                state,
                ctx,
                &mut follower,
                LeaseState::Faulted,
                Some((prover.as_ref(), 0)),
            )?,
        }
    }
    Ok(())
}

/// An accepted lease is due: paid if someone other than its provider fetched its output,
/// otherwise held for a verifier's availability check first.
pub(crate) fn pay_or_check(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    lease: &mut Lease,
) -> Result<(), AuctionError> {
    if lease.fetched {
        finish(state, ctx, lease, LeaseState::Paid, None)
    } else {
        await_verdict(state, ctx, lease, LeaseState::AvailabilityPending)
    }
}

/// The audit fallback: no verdict came for `lease` in time; it and its followers are
/// accepted.
pub(crate) fn audit_fallback(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    lease: &mut Lease,
) -> Result<(), AuctionError> {
    accept(state, ctx, lease)?;
    settle_followers(state, ctx, lease, None, &[])
}

/// No verdict came for a disputed lease in the whole wait (no verifier could judge it): its
/// result is accepted like an audit nobody judged, never refunded. A refund let a client
/// that disputed while no verifier was around get honest work for free; accepted, the
/// disagreement costs the party that asked for redundancy. The part of the client's dispute
/// reserve spent on this lease comes back from the verification pool: nobody was paid to
/// verify it.
pub(crate) fn dispute_fallback(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    lease: &mut Lease,
) -> Result<(), AuctionError> {
    let client = lease.client;
    let pool = module_account::verification_pool();
    let covered = audit_fee(lease.price, &state.auction_params())
        .saturating_sub(lease.verification_charge)
        .min(state.balance(&pool));
    move_funds(state, &pool, &client, covered)?;
    if covered > 0 {
        state.emit(
            RefundEvent {
                order_id: lease.order_id,
                client,
                amount: covered,
                reason: "unverified_dispute".into(),
            }
            .into(),
        );
    }
    lease.verification_charge = 0;
    accept(state, ctx, lease)
}

/// Moves `amount` of `order`'s dispute reserve to the verification pool, which pays the
/// dispute's verifiers. The caller stores the order.
fn spend_reserve(
    state: &mut impl StateWrite,
    order: &mut Order,
    amount: Amount,
) -> Result<(), AuctionError> {
    order.dispute_reserve = order
        .dispute_reserve
        .checked_sub(amount)
        .ok_or(AuctionError::Overflow)?;
    order.escrowed = order
        .escrowed
        .checked_sub(amount)
        .ok_or(AuctionError::Overflow)?;
    move_funds(
        state,
        &module_account::escrow(),
        &module_account::verification_pool(),
        amount,
    )
}

/// What verifying the replicas that disagreed with `faulted`, not yet final, cost the
/// client's dispute reserve: their dispute was `faulted`'s doing.
fn disagreeing_fees(state: &impl StateRead, faulted: &Lease) -> Result<Amount, AuctionError> {
    let params = state.auction_params();
    state
        .leases_of_order(faulted.order_id)
        .iter()
        .filter(|o| {
            o.id != faulted.id
                && !o.state.is_final()
                && o.result_hash.is_some()
                && o.result_hash != faulted.result_hash
        })
        .try_fold(0u128, |sum, o| sum.checked_add(audit_fee(o.price, &params)))
        .ok_or(AuctionError::Overflow)
}

/// Ends a lease in a final state: refunds or pays, updates reputation, slashes, closes the
/// provider's open-lease count and settles the order when it was its last lease. `fault`
/// is the prover and proving costs of a `Faulted` end.
pub(crate) fn finish<S: StateWrite>(
    state: &mut S,
    ctx: &BlockCtx,
    lease: &mut Lease,
    end: LeaseState,
    fault: Option<(Option<&Address>, Amount)>,
) -> Result<(), AuctionError> {
    let mut order = state
        .order(lease.order_id)
        .ok_or(AuctionError::UnknownOrder(lease.order_id))?;
    // A lease that committed and then walked away (released, or did not reveal) after
    // another replica revealed costs as much as a wrong result: it had seen the answer. A
    // lease that never committed missed its deadline before any reveal could be made.
    let (order_id, lease_id, committed) = (order.id, lease.id, lease.commitment.is_some());
    let exit_fault = |state: &S, abandoned: FaultKind| {
        let other_revealed = state
            .leases_of_order(order_id)
            .iter()
            .any(|l| l.id != lease_id && l.result_hash.is_some());
        if committed && other_revealed {
            FaultKind::ExitAfterReveal
        } else {
            abandoned
        }
    };
    match end {
        LeaseState::Paid => {
            pay(state, ctx, &mut order, lease)?;
            state.record_outcome(&lease.provider, ctx.height, Outcome::Accepted, lease.price)?;
        }
        LeaseState::Missed | LeaseState::Released => {
            let (reason, abandoned) = if end == LeaseState::Missed {
                ("missed_deadline", FaultKind::MissedDeadline)
            } else {
                ("released", FaultKind::AbandonedLease)
            };
            refund(state, &mut order, lease.price, reason)?;
            let fault = exit_fault(state, abandoned);
            slash_provider(
                state,
                ctx,
                &lease.provider,
                fault,
                &order.client,
                None,
                None,
            )?;
            state.record_outcome(
                &lease.provider,
                ctx.height,
                Outcome::MissedDeadline,
                lease.price,
            )?;
        }
        LeaseState::Faulted => {
            refund(state, &mut order, lease.price, "wrong_result")?;
            let (prover, costs) = fault.unwrap_or((None, 0));
            lease.verification_charge = 0;
            // In a dispute the client's reserve paid the verifiers: the slash pays the client
            // back, for this lease and for the replicas it disagreed with. An audit was paid
            // by the pool: the slash pays the pool back.
            let costs = if lease.state == LeaseState::Disputed {
                FaultCosts {
                    to: order.client,
                    amount: costs
                        .checked_add(disagreeing_fees(state, lease)?)
                        .ok_or(AuctionError::Overflow)?,
                }
            } else {
                FaultCosts {
                    to: module_account::verification_pool(),
                    amount: costs,
                }
            };
            slash_provider(
                state,
                ctx,
                &lease.provider,
                FaultKind::WrongResult,
                &order.client,
                prover,
                Some(costs),
            )?;
            state.record_outcome(&lease.provider, ctx.height, Outcome::Fault, lease.price)?;
        }
        _ => refund(state, &mut order, lease.price, "unresolved")?,
    }
    state.decrement_open_leases(&lease.provider)?;
    set_state(state, lease, end);
    let all_final = state
        .leases_of_order(order.id)
        .iter()
        .all(|l| l.state.is_final());
    if all_final {
        let unused = order.dispute_reserve;
        refund(state, &mut order, unused, "unused_dispute_reserve")?;
        order.dispute_reserve = 0;
        order.state = OrderState::Settled;
        crate::retire::schedule(state, ctx, order.id);
        state.emit(
            OrderSettledEvent {
                order_id: order.id,
                client: order.client,
            }
            .into(),
        );
    }
    state.put_order(&order);
    Ok(())
}

/// Applies a verifier's verdict to a lease that is waiting for one, or that is accepted but
/// not yet paid (a challenge within the window), and to the replicas that agreed with it,
/// but those in `spared` (leases with cases of their own still open, which their own
/// verdicts settle). The verification module calls this.
pub fn apply_verdict(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    lease_id: u64,
    verdict: Verdict,
    spared: &[u64],
) -> Result<(), AuctionError> {
    let mut lease = state
        .lease(lease_id)
        .ok_or(AuctionError::UnknownLease(lease_id))?;
    if !lease.state.takes_verdict() {
        return Err(AuctionError::VerdictNotPending(lease_id));
    }
    let availability = lease.state == LeaseState::AvailabilityPending;
    match verdict {
        Verdict::Honest if lease.state == LeaseState::Accepted => return Ok(()),
        // The output could be fetched: paid now (its challenge window is over), the
        // availability fee added to what it pays the verification pool.
        Verdict::Honest if availability => {
            let fee = availability_fee(lease.price, &state.auction_params());
            lease.fetched = true;
            lease.verification_charge = lease
                .verification_charge
                .checked_add(fee)
                .ok_or(AuctionError::Overflow)?;
            return finish(state, ctx, &mut lease, LeaseState::Paid, None);
        }
        Verdict::Honest => {
            lease.fetched = true;
            state.record_outcome(
                &lease.provider,
                ctx.height,
                Outcome::ChallengePassed,
                lease.price,
            )?;
            accept(state, ctx, &mut lease)?;
        }
        Verdict::Faulty { prover, costs } => finish(
            state,
            ctx,
            &mut lease,
            LeaseState::Faulted,
            Some((prover.as_ref(), costs)),
        )?,
    }
    // An output nobody could fetch is a wrong result of this provider's copy only: the
    // replicas that share its hash served their own.
    if availability {
        return Ok(());
    }
    settle_followers(state, ctx, &lease, Some(verdict), spared)
}

/// Holds a lease for the verification module until at least `until_height`: an accepted
/// lease is not paid before then, a lease waiting for a verdict does not fall back before
/// then. Used while a verdict, an appeal or a challenge about the lease is being settled, so
/// that the settlement can still reach it. Never shortens a timer.
pub fn hold_lease(
    state: &mut impl StateWrite,
    lease_id: u64,
    until_height: u64,
) -> Result<(), AuctionError> {
    let mut lease = state
        .lease(lease_id)
        .ok_or(AuctionError::UnknownLease(lease_id))?;
    let timer = match lease.state {
        LeaseState::Accepted => &mut lease.payout_height,
        LeaseState::AuditPending
        | LeaseState::Disputed
        | LeaseState::AuditFollowing
        | LeaseState::AvailabilityPending => &mut lease.verdict_deadline_height,
        _ => return Err(AuctionError::VerdictNotPending(lease_id)),
    };
    if timer.is_some_and(|at| at >= until_height) {
        return Ok(());
    }
    *timer = Some(until_height);
    state.enqueue(state_key::lease_timer(until_height, lease_id));
    state.put_lease(&lease);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commitment_binds_hash_provider_and_salt() {
        let (h, p, s) = ([1u8; 32], Address([2; 20]), [3u8; 32]);
        let c = commitment(&h, &p, &s);
        assert_ne!(c, commitment(&[9; 32], &p, &s));
        assert_ne!(c, commitment(&h, &Address([9; 20]), &s));
        assert_ne!(c, commitment(&h, &p, &[9; 32]));
        let mut bytes = h.to_vec();
        bytes.extend_from_slice(&p.0);
        bytes.extend_from_slice(&s);
        assert_eq!(c, *blake3::hash(&bytes).as_bytes(), "documented layout");
    }
}
