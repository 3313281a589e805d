//! Verification, first part: result commit-reveal, acceptance, disputes and audit sampling.
//!
//! A provider commits `blake3(result_hash ‖ provider address (20 bytes) ‖ salt)` by the
//! lease deadline and reveals after every replica has committed or the deadline has passed,
//! within `reveal_window_blocks`. When no replica of the order is left to reveal, the revealed
//! results are judged: two or more equal hashes are accepted; any disagreement puts every
//! revealed lease in `Disputed`; a lone result (k = 1, or the only replica that revealed) is
//! sampled for audit with probability `audit_max − (audit_max − audit_min) × score / 10^6`,
//! drawn as `u64::from_be_bytes(first 8 bytes of BlockCtx::draw("verify/audit", lease id
//! (8 bytes big-endian) ‖ commitment)) mod 10^6 < p`. The draw uses the hash of the block in
//! which the result is judged, which the provider does not know when it sends its reveal.
//! Sampled results wait in `AuditPending`. [`apply_verdict`] is the hook for the verifier
//! module: it settles `AuditPending`, `Disputed` and (within the challenge window)
//! `Accepted` leases. Without a verdict by `verdict_window_blocks`, an audit falls back to
//! acceptance and a dispute to a refund without any slash.

use gpuchain_reputation::{Outcome, ReputationRead, ReputationWrite};
use gpuchain_slashing::{slash_provider, FaultKind};
use gpuchain_staking::StakingWrite;
use gpuchain_types::{Address, BlockCtx, Ppm, StateWrite, PPM_ONE};

use crate::escrow::{pay, refund};
use crate::{
    state_key, AuctionError, AuctionParams, AuctionRead, AuctionWrite, AuditSampledEvent, Lease,
    LeaseState, LeaseStateEvent, OrderSettledEvent, OrderState,
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

/// Audit probability of a lone result from a provider with `score`.
pub fn audit_probability(score: Ppm, params: &AuctionParams) -> Ppm {
    let span = u64::from(params.audit_max_ppm.saturating_sub(params.audit_min_ppm));
    let cut = span.saturating_mul(u64::from(score.min(PPM_ONE))) / u64::from(PPM_ONE);
    params
        .audit_max_ppm
        .saturating_sub(Ppm::try_from(cut).unwrap_or(0))
}

/// Whether the draw for `lease` in this block falls under `probability`.
pub fn audit_drawn(ctx: &BlockCtx, lease: &Lease, probability: Ppm) -> bool {
    let mut subject = lease.id.to_be_bytes().to_vec();
    subject.extend_from_slice(&lease.commitment.unwrap_or_default());
    let draw = ctx.draw("verify/audit", &subject);
    let mut first = [0u8; 8];
    first.copy_from_slice(draw.get(..8).unwrap_or(&[0; 8]));
    u64::from_be_bytes(first) % u64::from(PPM_ONE) < u64::from(probability)
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
            state: new.name(),
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

/// Judges an order's revealed results once none of its leases can still commit or reveal.
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
    match revealed.as_mut_slice() {
        [] => Ok(()),
        [lone] => {
            let params = state.auction_params();
            let p = audit_probability(state.score(&lone.provider, ctx.height), &params);
            if audit_drawn(ctx, lone, p) {
                state.emit(
                    AuditSampledEvent {
                        lease_id: lone.id,
                        order_id,
                        provider: lone.provider,
                        probability_ppm: p,
                    }
                    .into(),
                );
                await_verdict(state, ctx, lone, LeaseState::AuditPending)
            } else {
                accept(state, ctx, lone)
            }
        }
        many => {
            let first = many.first().and_then(|l| l.result_hash);
            let agree = many.iter().all(|l| l.result_hash == first);
            for lease in many.iter_mut() {
                if agree {
                    accept(state, ctx, lease)?;
                } else {
                    await_verdict(state, ctx, lease, LeaseState::Disputed)?;
                }
            }
            Ok(())
        }
    }
}

/// Ends a lease in a final state: refunds or pays, updates reputation, slashes, closes the
/// provider's open-lease count and settles the order when it was its last lease.
pub(crate) fn finish<S: StateWrite>(
    state: &mut S,
    ctx: &BlockCtx,
    lease: &mut Lease,
    end: LeaseState,
    prover: Option<&Address>,
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
        LeaseState::Missed => {
            refund(state, &mut order, lease.price, "missed_deadline")?;
            let fault = exit_fault(state, FaultKind::MissedDeadline);
            slash_provider(state, ctx, &lease.provider, fault, &order.client, None)?;
            state.record_outcome(
                &lease.provider,
                ctx.height,
                Outcome::MissedDeadline,
                lease.price,
            )?;
        }
        LeaseState::Faulted => {
            refund(state, &mut order, lease.price, "wrong_result")?;
            slash_provider(
                state,
                ctx,
                &lease.provider,
                FaultKind::WrongResult,
                &order.client,
                prover,
            )?;
            state.record_outcome(&lease.provider, ctx.height, Outcome::Fault, lease.price)?;
        }
        LeaseState::Released => {
            refund(state, &mut order, lease.price, "released")?;
            let fault = exit_fault(state, FaultKind::AbandonedLease);
            slash_provider(state, ctx, &lease.provider, fault, &order.client, None)?;
            state.record_outcome(
                &lease.provider,
                ctx.height,
                Outcome::MissedDeadline,
                lease.price,
            )?;
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
        order.state = OrderState::Settled;
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
/// not yet paid (a challenge within the window). The verification module calls this.
pub fn apply_verdict(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    lease_id: u64,
    verdict: Verdict,
) -> Result<(), AuctionError> {
    let mut lease = state
        .lease(lease_id)
        .ok_or(AuctionError::UnknownLease(lease_id))?;
    if !(lease.state.is_verdict_pending() || lease.state == LeaseState::Accepted) {
        return Err(AuctionError::VerdictNotPending(lease_id));
    }
    match verdict {
        Verdict::Honest if lease.state == LeaseState::Accepted => Ok(()),
        Verdict::Honest => {
            state.record_outcome(
                &lease.provider,
                ctx.height,
                Outcome::ChallengePassed,
                lease.price,
            )?;
            accept(state, ctx, &mut lease)
        }
        Verdict::Faulty { prover } => {
            finish(state, ctx, &mut lease, LeaseState::Faulted, prover.as_ref())
        }
    }
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
        LeaseState::AuditPending | LeaseState::Disputed => &mut lease.verdict_deadline_height,
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

    fn lease(id: u64) -> Lease {
        Lease {
            id,
            order_id: 0,
            provider: Address([1; 20]),
            client: Address([2; 20]),
            price: 1,
            created_height: 0,
            deadline_height: 0,
            reveal_end_height: 0,
            commitment: Some([id.to_le_bytes()[0]; 32]),
            result_hash: None,
            payout_height: None,
            verdict_deadline_height: None,
            state: LeaseState::Revealed,
        }
    }

    #[test]
    fn audit_probability_falls_with_reputation_between_the_bounds() {
        let params = AuctionParams::default();
        assert_eq!(audit_probability(0, &params), params.audit_max_ppm);
        assert_eq!(audit_probability(PPM_ONE, &params), params.audit_min_ppm);
        assert_eq!(audit_probability(500_000, &params), 180_000);
        assert_eq!(audit_probability(u32::MAX, &params), params.audit_min_ppm);
    }

    #[test]
    fn the_audit_draw_hits_its_probability() {
        for p in [0u32, 50_000, 300_000, PPM_ONE] {
            let hits = (0..20_000u64)
                .filter(|&i| audit_drawn(&crate::test_utils::ctx(i / 7), &lease(i), p))
                .count() as u64;
            let expected = 20_000 * u64::from(p) / u64::from(PPM_ONE);
            assert!(
                hits.abs_diff(expected) <= 400,
                "p={p}: {hits} vs {expected}"
            );
        }
    }

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
