//! End of block: pay out matured unbondings, then compute the active validator set and the
//! changes CometBFT must apply.

use std::collections::BTreeMap;

use gpuchain_types::{BlockCtx, StateWrite};

use crate::{
    ActiveValidator, ConsensusAddress, StakingError, StakingRead, StakingWrite,
    ValidatorSetChangedEvent, ValidatorUpdate,
};

/// Releases matured unbonding entries, then returns the validator-set changes since the last
/// call (power 0 removes a validator), sorted by consensus address, and stores the new set.
///
/// The active set is the top `max_validators` by power among validators that are neither
/// jailed nor tombstoned and have power > 0; equal powers are ranked by consensus address,
/// lowest first. If that set would be empty the previous set is kept and nothing is
/// returned: CometBFT halts on an empty validator set.
pub fn end_block(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
) -> Result<Vec<ValidatorUpdate>, StakingError> {
    state.release_matured_unbondings(ctx.height)?;
    Ok(update_validator_set(state))
}

/// The set the validators in state call for now, keyed by consensus address.
fn target_set(state: &impl StakingRead) -> BTreeMap<ConsensusAddress, ActiveValidator> {
    let params = state.staking_params();
    let mut candidates: Vec<(u64, ConsensusAddress, ActiveValidator)> = state
        .validators()
        .into_iter()
        .filter(|v| v.is_active_candidate())
        .filter_map(|v| {
            let power = v.power(params.power_reduction);
            (power > 0).then(|| {
                let member = ActiveValidator {
                    operator: v.operator,
                    pubkey: v.consensus_pubkey,
                    power,
                };
                (power, v.consensus_address, member)
            })
        })
        .collect();
    candidates.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let cap = usize::try_from(params.max_validators).unwrap_or(usize::MAX);
    candidates
        .into_iter()
        .take(cap)
        .map(|(_, address, member)| (address, member))
        .collect()
}

pub(crate) fn update_validator_set(state: &mut impl StateWrite) -> Vec<ValidatorUpdate> {
    let target = target_set(state);
    if target.is_empty() {
        return Vec::new();
    }
    let previous: BTreeMap<ConsensusAddress, ActiveValidator> = state
        .active_set()
        .into_iter()
        .map(|m| (crate::consensus_address(&m.pubkey), m))
        .collect();
    let mut changes: BTreeMap<ConsensusAddress, ValidatorUpdate> = BTreeMap::new();
    for (address, old) in &previous {
        if !target.contains_key(address) {
            changes.insert(
                *address,
                ValidatorUpdate {
                    pubkey: old.pubkey,
                    power: 0,
                },
            );
        }
    }
    for (address, new) in &target {
        if previous.get(address).map(|old| old.power) != Some(new.power) {
            changes.insert(
                *address,
                ValidatorUpdate {
                    pubkey: new.pubkey,
                    power: new.power,
                },
            );
        }
    }
    if changes.is_empty() {
        return Vec::new();
    }
    let stored: Vec<(ConsensusAddress, ActiveValidator)> = target.into_iter().collect();
    state.put_active_set(&stored);
    changes
        .into_iter()
        .map(|(address, update)| {
            state.emit(
                ValidatorSetChangedEvent {
                    consensus_address: hex::encode(address),
                    power: update.power,
                }
                .into(),
            );
            update
        })
        .collect()
}
