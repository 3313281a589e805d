use gpuchain_auction::settlement::hold_lease;
use gpuchain_auction::{AuctionRead, Lease, LeaseState};
use gpuchain_reputation::{Outcome, ReputationWrite};
use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::settle::release;
use crate::{
    challenge_commitment, Case, CaseOutcome, CaseStage, ChallengeRevealedEvent, MsgRevealChallenge,
    PostedVerdict, VerdictKind, VerdictPostedEvent, VerifyError, VerifyRead, VerifyWrite,
};

/// What a reveal does to one lease of the ringer order.
enum Action {
    /// Expected hash returned: record the pass. A lease still waiting for an audit or a
    /// dispute keeps waiting: the ringer's owner never settles it.
    Pass,
    /// A different hash: the verifier's faulty verdict opens an appealable case.
    Fail,
    /// Nothing to do (already final, or a case past its first round owns the lease).
    Skip,
}

fn action(state: &impl VerifyRead, lease: &Lease, expected: &[u8; 32]) -> Action {
    let open = lease.state.takes_verdict();
    let case_busy = state.case(lease.id).is_some_and(|c| {
        c.stage == CaseStage::AppealWindow || (c.stage == CaseStage::AwaitingVerdict && c.round > 0)
    });
    match lease.result_hash {
        Some(h) if h == *expected && (open || lease.state == LeaseState::Paid) => Action::Pass,
        Some(_) if open && !case_busy => Action::Fail,
        _ => Action::Skip,
    }
}

/// Opens the ringer: checks the commitment against the order's client, that it predates the
/// order and that every lease was judged; passes or faults each lease.
///
/// Nothing is reimbursed from the verification pool: a ringer is an order its poster pays
/// like any other, and pays itself back only from the slash of a provider it catches (the
/// client's share and the prover's share, through the faulty verdict it opens). A pool
/// refund would let one owner of a verifier, a poster and a provider pump the pool with
/// ringers its own provider "passes" without computing anything.
pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &MsgRevealChallenge,
) -> Result<(), VerifyError> {
    let params = state.verify_params();
    let challenge = state
        .challenge(msg.challenge_id)
        .ok_or(VerifyError::UnknownChallenge(msg.challenge_id))?;
    if challenge.verifier != *signer {
        return Err(VerifyError::NotChallengeOwner(*signer));
    }
    let mut verifier = state
        .verifier(signer)
        .ok_or(VerifyError::NotAVerifier(*signer))?;
    if verifier.bonded < params.min_verifier_stake {
        return Err(VerifyError::BelowMinStake {
            bond: verifier.bonded,
            min: params.min_verifier_stake,
        });
    }
    let order = state
        .order(msg.order_id)
        .ok_or(VerifyError::UnknownOrder(msg.order_id))?;
    if state.challenged_by(msg.order_id).is_some() {
        return Err(VerifyError::OrderAlreadyChallenged(msg.order_id));
    }
    if challenge_commitment(&order.client, &msg.expected_output_hash, &msg.salt)
        != challenge.commitment
    {
        return Err(VerifyError::ChallengeMismatch);
    }
    if challenge.height >= order.created_height {
        return Err(VerifyError::ChallengeNotBeforeOrder {
            committed: challenge.height,
            posted: order.created_height,
        });
    }
    let leases = state.leases_of_order(order.id);
    let unjudged = leases.iter().any(|l| l.state.is_unjudged());
    if leases.is_empty() || unjudged {
        return Err(VerifyError::OrderNotJudged(order.id));
    }
    let appeal_end = ctx
        .height
        .checked_add(params.appeal_window_blocks)
        .ok_or(VerifyError::Overflow)?;
    let hold = appeal_end.checked_add(1).ok_or(VerifyError::Overflow)?;

    let (mut passed, mut failed) = (0u32, 0u32);
    for lease in &leases {
        match action(state, lease, &msg.expected_output_hash) {
            Action::Skip => {}
            Action::Pass => {
                passed = passed.saturating_add(1);
                if !lease.state.is_verdict_pending() {
                    state.record_outcome(
                        &lease.provider,
                        ctx.height,
                        Outcome::ChallengePassed,
                        lease.price,
                    )?;
                }
            }
            Action::Fail => {
                failed = failed.saturating_add(1);
                // A first-round assignment is superseded: its verifier is released.
                if let Some(a) = state.case(lease.id).and_then(|c| c.assignee) {
                    release(state, &a);
                }
                hold_lease(state, lease.id, hold)?;
                state.put_case(&Case {
                    lease_id: lease.id,
                    order_id: order.id,
                    provider: lease.provider,
                    client: lease.client,
                    round: 0,
                    stage: CaseStage::AppealWindow,
                    assignee: None,
                    deadline_height: ctx.height,
                    reassigned: false,
                    verdicts: vec![PostedVerdict {
                        verifier: *signer,
                        output_hash: msg.expected_output_hash,
                        verdict: VerdictKind::Faulty,
                        height: ctx.height,
                    }],
                    appeal_end_height: Some(appeal_end),
                    appellant: None,
                    deposit: 0,
                    served: vec![*signer],
                    challenge_id: Some(challenge.id),
                    outcome: CaseOutcome::Open,
                });
                state.set_case_timer(appeal_end, lease.id);
                // Posted like any first verdict, so the provider's agent can appeal it.
                state.emit(
                    VerdictPostedEvent {
                        lease_id: lease.id,
                        verifier: *signer,
                        verdict: VerdictKind::Faulty.name().into(),
                        output_hash: hex::encode(msg.expected_output_hash),
                        round: 0,
                    }
                    .into(),
                );
            }
        }
    }
    // Re-read: releasing a superseded assignment may have touched this verifier.
    if let Some(current) = state.verifier(signer) {
        verifier = current;
    }
    verifier.open_challenges = verifier.open_challenges.saturating_sub(1);
    verifier.open_cases = verifier.open_cases.saturating_add(u64::from(failed));
    verifier.verdicts = verifier.verdicts.saturating_add(u64::from(failed));
    state.put_verifier(&verifier);
    state.delete_challenge(&challenge);
    state.mark_challenged(order.id, challenge.id);
    crate::retire::schedule_challenged(state, ctx, order.id);
    state.emit(
        ChallengeRevealedEvent {
            challenge_id: challenge.id,
            order_id: order.id,
            verifier: *signer,
            passed,
            failed,
        }
        .into(),
    );
    Ok(())
}
