use std::collections::BTreeMap;

use gpuchain_staking::{ConsensusAddress, StakingRead};
use gpuchain_types::{BlockCtx, StateWrite};

use crate::jail::{punish_validator, Penalty};
use crate::{SigningInfo, SlashReason, SlashRecord, SlashingError, SlashingRead, SlashingWrite};

/// Updates every voter's liveness ring from the block's commit info (`(consensus address,
/// signed)` for each validator of the previous block) and jails and slashes those that
/// missed more than `max_missed_blocks` of the last `signed_blocks_window`. Unknown, jailed
/// and tombstoned validators are skipped; a repeated address counts once. Returns the
/// downtime slashes, in consensus-address order.
pub fn handle_commit_info(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    votes: &[(ConsensusAddress, bool)],
) -> Result<Vec<SlashRecord>, SlashingError> {
    let params = state.slashing_params();
    let window = params.signed_blocks_window;
    let votes: BTreeMap<ConsensusAddress, bool> = votes.iter().copied().collect();
    let mut slashes = Vec::new();
    for (address, signed) in votes {
        let Some(validator) = state.validator_by_consensus_address(&address) else {
            continue;
        };
        if validator.jailed || validator.tombstoned {
            continue;
        }
        let mut info = state
            .signing_info(&address)
            .filter(|i| i.window == window)
            .unwrap_or_else(|| SigningInfo::new(window));
        if info.record(signed) > params.max_missed_blocks {
            let until = ctx
                .height
                .checked_add(params.jail_blocks)
                .ok_or(SlashingError::Overflow)?;
            let penalty = Penalty {
                ppm: params.downtime_slash_ppm,
                reason: SlashReason::Downtime,
                jailed_until: until,
                tombstone: false,
                unbonding: &[],
            };
            let record = punish_validator(state, ctx, validator, &penalty)?;
            slashes.push(record);
            info = SigningInfo::new(window);
        }
        state.put_signing_info(&address, &info);
    }
    Ok(slashes)
}
