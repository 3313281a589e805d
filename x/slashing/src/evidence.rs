use gpuchain_staking::StakingRead;
use gpuchain_types::{BlockCtx, StateWrite};

use crate::jail::punish_validator;
use crate::{Evidence, SlashReason, SlashRecord, SlashingError, SlashingRead};

/// Handles one piece of CometBFT misbehaviour evidence (FinalizeBlock's `misbehavior`):
/// burns `double_sign_slash_ppm` of the offender's bond and tombstones it; staking's next
/// end-block removes it from the set. Evidence about an unknown or already tombstoned
/// validator is ignored (`Ok(None)`): CometBFT may report the same offence more than once.
pub fn handle_evidence(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    evidence: &Evidence,
) -> Result<Option<SlashRecord>, SlashingError> {
    let Some(validator) = state.validator_by_consensus_address(&evidence.consensus_address) else {
        return Ok(None);
    };
    if validator.tombstoned {
        return Ok(None);
    }
    let ppm = state.slashing_params().double_sign_slash_ppm;
    let reason = SlashReason::DoubleSign(evidence.kind);
    punish_validator(state, ctx, validator, ppm, reason, u64::MAX, true).map(Some)
}
