use gpuchain_staking::{StakingRead, UnbondingKind};
use gpuchain_types::{BlockCtx, StateWrite};

use crate::jail::{punish_validator, Penalty};
use crate::{Evidence, SlashReason, SlashRecord, SlashingError, SlashingRead};

/// Handles one piece of CometBFT misbehaviour evidence (FinalizeBlock's `misbehavior`):
/// burns `double_sign_slash_ppm` of the offender's bond and tombstones it; staking's next
/// end-block removes it from the set. Self-bond that started unbonding at or after the
/// infraction height is cut by the same share, so unbonding right after double-signing does
/// not escape the penalty. Evidence about an unknown or already tombstoned
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
    let unbonding: Vec<_> = state
        .unbonding_entries_of(&validator.operator)
        .into_iter()
        .filter(|e| e.kind == UnbondingKind::Validator && e.creation_height >= evidence.height)
        .collect();
    let penalty = Penalty {
        ppm: state.slashing_params().double_sign_slash_ppm,
        reason: SlashReason::DoubleSign(evidence.kind),
        jailed_until: u64::MAX,
        tombstone: true,
        unbonding: &unbonding,
    };
    punish_validator(state, ctx, validator, &penalty).map(Some)
}
