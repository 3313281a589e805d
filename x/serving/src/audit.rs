//! Audits of claims: the draw after a claim's block, the reveal deadline, the jury of drawn
//! verifiers, the appeal window and appeal jury, and what the final verdict does (see the
//! crate docs for the rules).

use gpuchain_slashing::{slash_provider, FaultCosts, FaultKind};
use gpuchain_types::{Address, BlockCtx, StateRead, StateWrite};
use gpuchain_verify::jury::{self, Misjudgement};

use crate::escrow::{drop_lease, move_funds, pay_verifiers, settle_claim, Settlement};
use crate::{
    module_account::serving_escrow, Claim, ClaimStage, Judgement, JuryVerdict, ServingAuditEvent,
    ServingError, ServingJurorEvent, ServingRead, ServingVerdictStandsEvent, ServingWrite, Timer,
};

/// Draw purposes: the audit roll, the audited position, the jurors.
const AUDIT: &str = "serving/audit";
const POSITION: &str = "serving/audit-position";
const JUROR: &str = "serving/juror";
const SECOND_OPINION: &str = "serving/second-opinion";

/// In the end-block of the claim's block: audit it (and say which receipt), or pay it.
pub(crate) fn draw(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    mut claim: Claim,
) -> Result<(), ServingError> {
    let params = state.serving_params();
    let subject = claim.id.to_be_bytes();
    let forced = state.serving_forced_audit(claim.id);
    if !forced && ctx.draw_ppm(AUDIT, &subject) >= u64::from(params.audit_ppm) {
        return settle_claim(
            state,
            &claim,
            Settlement::Pay {
                judges: &[],
                outcome: "unaudited",
            },
        );
    }
    let roll = ctx.draw(POSITION, &subject);
    let roll = roll
        .first_chunk::<8>()
        .map_or(0, |b| u64::from_be_bytes(*b));
    let index = roll
        .checked_rem(claim.count)
        .ok_or(ServingError::EmptyClaim)?;
    let deadline = ctx
        .height
        .checked_add(params.reveal_window_blocks)
        .ok_or(ServingError::Overflow)?;
    let lease = state
        .serving_lease(claim.lease_id)
        .ok_or(ServingError::UnknownLease(claim.lease_id))?;
    claim.stage = ClaimStage::AwaitingReveal { index, deadline };
    state.put_serving_claim(&claim);
    state.set_serving_timer(deadline, Timer::Reveal(claim.id));
    state.emit(
        ServingAuditEvent {
            claim_id: claim.id,
            lease_id: claim.lease_id,
            provider: lease.provider,
            client: lease.client,
            index,
            deadline,
        }
        .into(),
    );
    Ok(())
}

/// Nobody revealed the audited receipt: the provider is slashed as for a wrong result and
/// the client refunded the whole claim.
pub(crate) fn withheld(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    claim: Claim,
) -> Result<(), ServingError> {
    let lease = state
        .serving_lease(claim.lease_id)
        .ok_or(ServingError::UnknownLease(claim.lease_id))?;
    slash_provider(
        state,
        ctx,
        &lease.provider,
        FaultKind::WrongResult,
        &lease.client,
        None,
        None,
    )?;
    settle_claim(
        state,
        &claim,
        Settlement::Refund {
            outcome: "withheld",
        },
    )?;
    drop_lease(state, ctx, lease.id, "faulty")
}

/// Whether some verifier could be drawn to judge a claim on `model` between `parties`.
pub(crate) fn judged_for(
    state: &impl StateRead,
    height: u64,
    model: &[u8; 32],
    parties: &[Address],
) -> bool {
    !jury::candidates(state, height, parties, &[], |v| {
        state.judges_model(v, model)
    })
    .is_empty()
}

/// Draws the next verifier for a revealed claim, or settles it with no verdict when none
/// can be drawn (an appeal then ends with the first verdict and the deposit back). Each
/// jury, the first and the appeal's, has `max_jury_draws` draws. The caller has stored
/// nothing of `claim` yet.
pub(crate) fn assign_next(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    mut claim: Claim,
    mut judgement: Box<Judgement>,
) -> Result<(), ServingError> {
    let params = state.serving_params();
    let lease = state
        .serving_lease(claim.lease_id)
        .ok_or(ServingError::UnknownLease(claim.lease_id))?;
    let draws = judgement.served.len();
    let first_draws = judgement.appeal.as_ref().map_or(0, |a| a.first_draws);
    // Recusals are no draws: a juror that cannot judge never takes the place of one that can
    // (each recuses once, so the draws still end with the verifiers).
    let recused = state.serving_recusals(claim.id, judgement.appeal.is_some());
    let this_round = u64::try_from(draws)
        .ok()
        .and_then(|d| d.checked_sub(u64::from(first_draws)))
        .and_then(|d| d.checked_sub(u64::from(recused)))
        .ok_or(ServingError::Overflow)?;
    let mut subject = claim.id.to_be_bytes().to_vec();
    subject.extend(u64::try_from(draws).unwrap_or(u64::MAX).to_be_bytes());
    let drawn = if this_round < u64::from(params.max_jury_draws) {
        jury::draw_among(
            state,
            ctx,
            (JUROR, &subject),
            &[lease.client, lease.provider],
            &judgement.served,
            |v| state.judges_model(v, &lease.model.blake3),
        )
    } else {
        None
    };
    let Some(verifier) = drawn else {
        if judgement.appeal.is_some() {
            return decide_appeal(state, ctx, claim, judgement, None);
        }
        // No verdict stands: whoever judged is let go, nobody slashed.
        release_all(state, &judgement.verdicts);
        return settle_claim(
            state,
            &claim,
            Settlement::Pay {
                judges: &[],
                outcome: "no_verdict",
            },
        );
    };
    jury::engage(state, &verifier)?;
    let deadline = ctx
        .height
        .checked_add(params.verdict_window_blocks)
        .ok_or(ServingError::Overflow)?;
    judgement.assignee = Some(verifier);
    judgement.deadline = deadline;
    judgement.served.push(verifier);
    let round = u32::try_from(judgement.verdicts.len())
        .ok()
        .and_then(|n| n.checked_add(1))
        .ok_or(ServingError::Overflow)?;
    claim.stage = ClaimStage::Judging(judgement);
    state.put_serving_claim(&claim);
    state.set_serving_timer(deadline, Timer::Verdict(claim.id));
    state.emit(
        ServingJurorEvent {
            claim_id: claim.id,
            lease_id: claim.lease_id,
            verifier,
            deadline,
            round,
        }
        .into(),
    );
    Ok(())
}

/// After a verdict: another round, the standing verdict (open to appeal when the window is
/// positive) or, in an appeal, the final one. An appeal jury decides by two agreeing
/// verdicts, `honest` as much as `faulty`.
pub(crate) fn next_step(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    claim: Claim,
    judgement: Box<Judgement>,
) -> Result<(), ServingError> {
    let params = state.serving_params();
    let found: Vec<bool> = judgement.verdicts.iter().map(|v| v.honest).collect();
    let appeal = judgement.appeal.is_some();
    let standing = match found.as_slice() {
        [true] if appeal => None,
        [true] => {
            let subject = claim.id.to_be_bytes();
            if ctx.draw_ppm(SECOND_OPINION, &subject) < u64::from(params.second_opinion_ppm) {
                None
            } else {
                Some(true)
            }
        }
        [false] => None,
        [a, b] if a == b => Some(*a),
        [_, _] => None,
        [a, b, c] => Some(if a == b { *a } else { *c }),
        _ => return Err(ServingError::Overflow),
    };
    match standing {
        None => assign_next(state, ctx, claim, judgement),
        Some(honest) if appeal => decide_appeal(state, ctx, claim, judgement, Some(honest)),
        Some(honest) if params.appeal_window_blocks == 0 => {
            apply(state, ctx, claim, &judgement.verdicts, honest)
        }
        Some(honest) => open_appeal_window(state, ctx, claim, judgement, honest),
    }
}

/// The first jury's verdict stands: it applies when the appeal window passes, unless the
/// party it goes against appeals before.
fn open_appeal_window(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    mut claim: Claim,
    judgement: Box<Judgement>,
    honest: bool,
) -> Result<(), ServingError> {
    let lease = state
        .serving_lease(claim.lease_id)
        .ok_or(ServingError::UnknownLease(claim.lease_id))?;
    let appeal_deadline = ctx
        .height
        .checked_add(state.serving_params().appeal_window_blocks)
        .ok_or(ServingError::Overflow)?;
    claim.stage = ClaimStage::Standing {
        honest,
        appeal_deadline,
        judgement,
    };
    state.put_serving_claim(&claim);
    state.set_serving_timer(appeal_deadline, Timer::Appeal(claim.id));
    state.emit(
        ServingVerdictStandsEvent {
            claim_id: claim.id,
            lease_id: claim.lease_id,
            provider: lease.provider,
            client: lease.client,
            honest,
            appeal_deadline,
        }
        .into(),
    );
    Ok(())
}

/// The appeal window passed without an appeal: the standing verdict applies.
pub(crate) fn window_closed(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    mut claim: Claim,
) -> Result<(), ServingError> {
    match std::mem::replace(&mut claim.stage, ClaimStage::Posted) {
        ClaimStage::Standing {
            honest,
            appeal_deadline,
            judgement,
        } if appeal_deadline == ctx.height => apply(state, ctx, claim, &judgement.verdicts, honest),
        _ => Ok(()),
    }
}

/// The appeal jury decided (`Some`), or it could not be completed (`None`: the first verdict
/// stands, the appeal jurors are let go). Upheld, the appeal deposit pays the appeal jury;
/// overturned or undecided, it goes back to the appellant. Then the final verdict applies
/// over both juries: whoever of either voted against a decided verdict is slashed.
fn decide_appeal(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    claim: Claim,
    mut judgement: Box<Judgement>,
    decided: Option<bool>,
) -> Result<(), ServingError> {
    let Some(appeal) = judgement.appeal.take() else {
        return Err(ServingError::NotAppealable(claim.id));
    };
    let last = decided.unwrap_or(appeal.appealed);
    if decided == Some(appeal.appealed) {
        let upholders: Vec<_> = judgement
            .verdicts
            .iter()
            .filter(|v| v.honest == last)
            .map(|v| v.verifier)
            .collect();
        pay_verifiers(state, &upholders, appeal.deposit)?;
    } else {
        move_funds(state, &serving_escrow(), &appeal.appellant, appeal.deposit)?;
    }
    let mut all = appeal.first_verdicts;
    if decided.is_some() {
        all.append(&mut judgement.verdicts);
    } else {
        release_all(state, &judgement.verdicts);
    }
    apply(state, ctx, claim, &all, last)
}

/// Lets go the verifiers of `verdicts` that no verdict stands on: nobody is slashed.
fn release_all(state: &mut impl StateWrite, verdicts: &[JuryVerdict]) {
    for v in verdicts {
        jury::release(state, &v.verifier);
    }
}

/// Applies the final verdict: the verifiers who voted against it are slashed, then the claim
/// is paid (`honest`) or the provider slashed and the client refunded (`faulty`).
fn apply(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    claim: Claim,
    verdicts: &[JuryVerdict],
    honest: bool,
) -> Result<(), ServingError> {
    let lease = state
        .serving_lease(claim.lease_id)
        .ok_or(ServingError::UnknownLease(claim.lease_id))?;
    let mut winners = Vec::new();
    for v in verdicts {
        jury::release(state, &v.verifier);
        if v.honest == honest {
            winners.push(v.verifier);
        } else {
            let harmed = if v.honest {
                lease.client
            } else {
                lease.provider
            };
            jury::slash(
                state,
                ctx,
                &v.verifier,
                Misjudgement::Overturned { harmed },
                claim.id,
            )?;
        }
    }
    if honest {
        return settle_claim(
            state,
            &claim,
            Settlement::Pay {
                judges: &winners,
                outcome: "honest",
            },
        );
    }
    let outcome = slash_provider(
        state,
        ctx,
        &lease.provider,
        FaultKind::WrongResult,
        &lease.client,
        winners.first(),
        Some(FaultCosts {
            to: serving_escrow(),
            amount: claim.audit_reserve,
        }),
    )?;
    pay_verifiers(state, &winners, outcome.to_costs)?;
    settle_claim(state, &claim, Settlement::Refund { outcome: "faulty" })?;
    drop_lease(state, ctx, lease.id, "faulty")
}

/// The assigned verifier posted nothing by its deadline: it is slashed and another drawn.
pub(crate) fn missed(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    claim: Claim,
    mut judgement: Box<Judgement>,
) -> Result<(), ServingError> {
    let Some(verifier) = judgement.assignee.take() else {
        return Ok(());
    };
    jury::release(state, &verifier);
    jury::slash(state, ctx, &verifier, Misjudgement::Missed, claim.id)?;
    assign_next(state, ctx, claim, judgement)
}
