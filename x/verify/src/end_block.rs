//! End of block, in this order: pay out matured verifier unbondings, pay owed audit fees
//! (oldest first, within the pool's per-block outflow cap), expire unrevealed
//! challenges, fire case timers (missed verdict deadlines are slashed and reassigned once;
//! closed appeal windows apply the first verdict or, for a drawn share of `honest` ones, open a
//! spot check), then open a case for every lease the
//! auction holds for a verdict that has none, or whose case closed without any verdict
//! (until `max_verdict_wait_blocks` after its reveal window). Runs right after
//! `gpuchain_auction::end_block`.
//! Queues are keyed by height, so a skipped height is caught up.

use gpuchain_auction::settlement::hold_lease;
use gpuchain_auction::{AuctionRead, LeaseState};
use gpuchain_types::{
    mul_ppm, Address, Amount, BlockCtx, Ppm, StateRead, StateReadExt, StateWrite, PPM_ONE,
};

use crate::assign::{assign, assign_to, draw as draw_verifier};
use crate::settle::{case_fee, pay_owed_fees, release, settle, slash_verifier, Offence};
use crate::{
    state_key, Case, CaseOutcome, CaseStage, ChallengeExpiredEvent, SpotCheckedEvent, VerdictKind,
    VerifyError, VerifyRead, VerifyWrite,
};

/// Runs the verify end-block work for `ctx.height`. An error is a broken invariant.
pub fn end_block(state: &mut impl StateWrite, ctx: &BlockCtx) -> Result<(), VerifyError> {
    state.release_matured_verifier_unbondings(ctx.height)?;
    pay_owed_fees(state, ctx.height)?;
    for (key, id) in state.ids_due(state_key::challenge_expiry_prefix(), ctx.height) {
        state.delete(key);
        if let Some(challenge) = state.challenge(id) {
            state.delete_challenge(&challenge);
            if let Some(mut v) = state.verifier(&challenge.verifier) {
                v.open_challenges = v.open_challenges.saturating_sub(1);
                state.put_verifier(&v);
            }
            state.emit(
                ChallengeExpiredEvent {
                    challenge_id: id,
                    verifier: challenge.verifier,
                }
                .into(),
            );
        }
    }
    for (key, lease_id) in state.ids_due(state_key::case_timers_prefix(), ctx.height) {
        state.delete(key);
        let Some(mut case) = state.case(lease_id) else {
            continue;
        };
        match case.stage {
            CaseStage::AwaitingVerdict if case.deadline_height <= ctx.height => {
                missed(state, ctx, &mut case)?;
            }
            CaseStage::AppealWindow if case.appeal_end_height.is_some_and(|e| e <= ctx.height) => {
                let checked = spot_check(state, ctx, &mut case)?;
                let first = case.verdicts.first().map(|v| v.verdict);
                if !checked {
                    settle(state, ctx, &mut case, first)?;
                }
            }
            // A stale timer: the case moved on since it was set.
            _ => {}
        }
    }
    crate::retire::run(state, ctx);
    let wait = state.verify_params().max_verdict_wait_blocks;
    for lease in state.verdict_pending_leases() {
        let wait_end = lease.reveal_end_height.saturating_add(wait);
        let served = match state.case(lease.id) {
            // The client confirmed receipt while the lease waited for its availability
            // check: nothing left to check; the auction pays it at its verdict deadline.
            None if lease.state == LeaseState::AvailabilityPending && lease.fetched => continue,
            None => Vec::new(),
            // Every verifier drawn for it was silent: draw again, without them, while the
            // lease may still wait.
            Some(c) if c.outcome == CaseOutcome::NoVerdict && ctx.height < wait_end => c.served,
            Some(_) => continue,
        };
        let mut case = Case {
            lease_id: lease.id,
            order_id: lease.order_id,
            provider: lease.provider,
            client: lease.client,
            round: 0,
            stage: CaseStage::AwaitingVerdict,
            assignee: None,
            deadline_height: 0,
            reassigned: false,
            verdicts: Vec::new(),
            appeal_end_height: None,
            appellant: None,
            deposit: 0,
            served,
            challenge_id: None,
            outcome: CaseOutcome::Open,
        };
        // Without an eligible verifier nothing is stored and the lease is retried next block;
        // it is held (past the auction's end-block, which runs first) until the wait ends,
        // then the auction's fallback applies at its verdict deadline.
        if assign(state, ctx, &mut case)? {
            state.put_case(&case);
        } else if ctx.height < wait_end {
            let until = ctx.height.checked_add(2).ok_or(VerifyError::Overflow)?;
            hold_lease(state, lease.id, until)?;
        }
    }
    Ok(())
}

/// Whether the unappealed `honest` first verdict of `case`, whose appeal window just closed,
/// is re-judged: drawn with `spot_check_ppm` from this block's seed (unknown when the verdict
/// was posted), it becomes an appeal round with no appellant and no deposit. The second
/// verdict settles it if it agrees; otherwise a tie-breaker decides and whoever was wrong is
/// slashed, the first verifier included. `false` when not drawn or nobody is eligible.
fn spot_check(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    case: &mut Case,
) -> Result<bool, VerifyError> {
    let Some(first) = case.verdicts.first().cloned() else {
        return Ok(false);
    };
    if first.verdict != VerdictKind::Honest || case.appellant.is_some() || case.round != 0 {
        return Ok(false);
    }
    let roll = ctx.draw_ppm("verify/spot_check", &case.lease_id.to_be_bytes());
    if roll >= u64::from(spot_check_chance(state, case, &first.verifier)) {
        return Ok(false);
    }
    case.round = 1;
    case.reassigned = false;
    let Some(verifier) = draw_verifier(state, ctx, case) else {
        case.round = 0;
        return Ok(false);
    };
    assign_to(state, ctx, case, verifier)?;
    state.put_case(case);
    state.emit(
        SpotCheckedEvent {
            lease_id: case.lease_id,
            checked: first.verifier,
        }
        .into(),
    );
    Ok(true)
}

/// The chance that `case`'s honest verdict by `verifier` is spot-checked:
/// `spot_check_ppm`, raised for a fee that is large against the verifier's wrong-verdict
/// slash (see [`spot_check_floor`]).
fn spot_check_chance(state: &impl StateRead, case: &Case, verifier: &Address) -> Ppm {
    let params = state.verify_params();
    let fee = state
        .lease(case.lease_id)
        .map_or(0, |l| case_fee(&l, &state.auction_params()));
    let bond = state.verifier(verifier).map_or(0, |v| v.bonded);
    let slash = mul_ppm(bond, params.verifier_wrong_slash_ppm).unwrap_or(Amount::MAX);
    params.spot_check_ppm.max(spot_check_floor(
        fee,
        slash,
        params.spot_check_deterrence_ppm,
    ))
}

/// `⌈fee × deterrence / (fee + slash)⌉` ppm, capped at certainty: with it a verifier that
/// saves the fee's worth of work by rubber-stamping a wrong result, and loses the fee and
/// `slash` when caught, loses `(deterrence − 1) × fee` in expectation.
pub fn spot_check_floor(fee: Amount, slash: Amount, deterrence: Ppm) -> Ppm {
    let denominator = fee.saturating_add(slash);
    if denominator == 0 {
        return 0;
    }
    let floor = fee
        .saturating_mul(u128::from(deterrence))
        .div_ceil(denominator);
    Ppm::try_from(floor.min(u128::from(PPM_ONE))).unwrap_or(PPM_ONE)
}

/// The assignee missed its deadline: slash, then reassign the round once; a round that
/// cannot be reassigned fails (see the crate docs).
fn missed(state: &mut impl StateWrite, ctx: &BlockCtx, case: &mut Case) -> Result<(), VerifyError> {
    if let Some(assignee) = case.assignee.take() {
        release(state, &assignee);
        slash_verifier(state, ctx, &assignee, Offence::Missed, case.lease_id)?;
    }
    if !case.reassigned {
        case.reassigned = true;
        if assign(state, ctx, case)? {
            state.put_case(case);
            return Ok(());
        }
    }
    unjudged(state, ctx, case)
}

/// No verifier judges the round: the case settles as far as its verdicts go (a round-0
/// case waits to be drawn again while its lease may, see `end_block`).
pub(crate) fn unjudged(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    case: &mut Case,
) -> Result<(), VerifyError> {
    match case.round {
        0 => settle(state, ctx, case, None),
        1 => {
            let first = case.verdicts.first().map(|v| v.verdict);
            settle(state, ctx, case, first)
        }
        _ => settle(state, ctx, case, None),
    }
}
