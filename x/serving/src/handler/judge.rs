use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::receipt::{verify_proof, MAX_PROOF_LEN};
use crate::{
    audit, Claim, ClaimStage, Judgement, JuryVerdict, MsgRevealReceipt, MsgServingRecuse,
    MsgServingVerdict, ServingError, ServingParams, ServingRead, ServingRecusedEvent, ServingWrite,
    Timer,
};

pub(super) fn check_reveal(
    m: &MsgRevealReceipt,
    params: &ServingParams,
) -> Result<(), ServingError> {
    let bytes = m.request.len().saturating_add(m.response.len());
    if u64::try_from(bytes).unwrap_or(u64::MAX) > params.max_reveal_bytes {
        return Err(ServingError::BadReveal(format!(
            "request and response are {bytes} bytes; at most {} are revealed on chain",
            params.max_reveal_bytes
        )));
    }
    if m.proof.len() > MAX_PROOF_LEN {
        return Err(ServingError::BadReveal("the proof is too long".into()));
    }
    Ok(())
}

pub(super) fn reveal(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    m: &MsgRevealReceipt,
) -> Result<(), ServingError> {
    check_reveal(m, &state.serving_params())?;
    let mut claim = state
        .serving_claim(m.claim_id)
        .ok_or(ServingError::UnknownClaim(m.claim_id))?;
    let ClaimStage::AwaitingReveal { index, deadline } = claim.stage else {
        return Err(ServingError::NotAwaitingReveal(claim.id));
    };
    if ctx.height > deadline {
        return Err(ServingError::NotAwaitingReveal(claim.id));
    }
    super::lease_for(state, claim.lease_id, signer, super::Party::Either)?;
    let bad = |why: &str| Err(ServingError::BadReveal(why.to_string()));
    let r = &m.receipt;
    if r.lease_id != claim.lease_id || r.seq < claim.first_seq || r.seq >= claim.end_seq {
        return bad("the receipt is not of this claim's lease and range");
    }
    if !verify_proof(r.leaf(), index, claim.count, &m.proof, &claim.root) {
        return bad("the proof does not lead to the claim's root");
    }
    if blake3::hash(&m.request).as_bytes() != &r.request_hash {
        return bad("the request body does not hash to the receipt's request hash");
    }
    if blake3::hash(&m.response).as_bytes() != &r.response_hash {
        return bad("the response body does not hash to the receipt's response hash");
    }
    state.cancel_serving_timer(deadline, Timer::Reveal(claim.id));
    let judgement = Box::new(Judgement {
        receipt: r.clone(),
        request: m.request.clone(),
        response: m.response.clone(),
        verdicts: Vec::new(),
        assignee: None,
        deadline: 0,
        served: Vec::new(),
        appeal: None,
    });
    claim.stage = ClaimStage::Posted;
    audit::assign_next(state, ctx, claim, judgement)
}

/// Claim `claim_id` taken off its juror `signer`, who acts before its deadline: its verdict
/// timer cancelled and nobody assigned; else `NotAssigned`.
fn assigned_to(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    claim_id: u64,
) -> Result<(Claim, Box<Judgement>), ServingError> {
    let mut claim = state
        .serving_claim(claim_id)
        .ok_or(ServingError::UnknownClaim(claim_id))?;
    let stage = std::mem::replace(&mut claim.stage, ClaimStage::Posted);
    let ClaimStage::Judging(mut judgement) = stage else {
        return Err(ServingError::NotAssigned(*signer));
    };
    if judgement.assignee != Some(*signer) || ctx.height > judgement.deadline {
        return Err(ServingError::NotAssigned(*signer));
    }
    state.cancel_serving_timer(judgement.deadline, Timer::Verdict(claim.id));
    judgement.assignee = None;
    Ok((claim, judgement))
}

pub(super) fn verdict(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    m: &MsgServingVerdict,
) -> Result<(), ServingError> {
    let (claim, mut judgement) = assigned_to(state, ctx, signer, m.claim_id)?;
    judgement.verdicts.push(JuryVerdict {
        verifier: *signer,
        honest: m.honest,
        height: ctx.height,
    });
    gpuchain_verify::jury::count_verdict(state, signer);
    audit::next_step(state, ctx, claim, judgement)
}

/// The assigned verifier steps down: let go (no slash, no fee, never drawn again for the
/// claim) and the next juror drawn, as after a missed deadline. A verifier that cannot run
/// a claim's model (any model name may be ordered) would otherwise be slashed for a miss:
/// one owner of a client and a provider could jail every verifier with claims on a model
/// nobody runs. A recusal is not one of the claim's `max_jury_draws` (a cheat's own
/// verifiers recusing would otherwise use up the draws honest jurors fill), and a verifier
/// recuses once, so a claim nobody can judge ends (paid, nobody slashed) when every
/// eligible verifier has been drawn.
pub(super) fn recuse(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    m: &MsgServingRecuse,
) -> Result<(), ServingError> {
    let (claim, judgement) = assigned_to(state, ctx, signer, m.claim_id)?;
    state.add_serving_recusal(claim.id, judgement.appeal.is_some())?;
    gpuchain_verify::jury::release(state, signer);
    state.emit(
        ServingRecusedEvent {
            claim_id: claim.id,
            lease_id: claim.lease_id,
            verifier: *signer,
        }
        .into(),
    );
    audit::assign_next(state, ctx, claim, judgement)
}
