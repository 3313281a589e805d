use gpuchain_bank::BankWrite;
use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::{
    audit, module_account::serving_escrow, ClaimStage, MsgAppealServing, ServingAppeal,
    ServingAppealedEvent, ServingError, ServingRead, ServingWrite, Timer,
};

/// The party a standing verdict goes against appeals it: the deposit is locked and a fresh
/// jury (none of the first) is drawn.
pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    m: &MsgAppealServing,
) -> Result<(), ServingError> {
    let mut claim = state
        .serving_claim(m.claim_id)
        .ok_or(ServingError::UnknownClaim(m.claim_id))?;
    let stage = std::mem::replace(&mut claim.stage, ClaimStage::Posted);
    let ClaimStage::Standing {
        honest,
        appeal_deadline,
        mut judgement,
    } = stage
    else {
        return Err(ServingError::NotAppealable(claim.id));
    };
    if ctx.height > appeal_deadline || judgement.appeal.is_some() {
        return Err(ServingError::NotAppealable(claim.id));
    }
    // An `honest` verdict pays the provider: only the client may say it is wrong; a `faulty`
    // one slashes the provider: only the provider may.
    let party = if honest {
        super::Party::Client
    } else {
        super::Party::Provider
    };
    super::lease_for(state, claim.lease_id, signer, party)?;
    let deposit = state.serving_params().appeal_deposit;
    if deposit > 0 {
        state.transfer(signer, &serving_escrow(), deposit)?;
    }
    state.cancel_serving_timer(appeal_deadline, Timer::Appeal(claim.id));
    judgement.appeal = Some(ServingAppeal {
        appellant: *signer,
        deposit,
        appealed: honest,
        first_verdicts: std::mem::take(&mut judgement.verdicts),
        first_draws: u32::try_from(judgement.served.len()).map_err(|_| ServingError::Overflow)?,
    });
    state.emit(
        ServingAppealedEvent {
            claim_id: claim.id,
            lease_id: claim.lease_id,
            appellant: *signer,
            honest,
            deposit,
        }
        .into(),
    );
    audit::assign_next(state, ctx, claim, judgement)
}
