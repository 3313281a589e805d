use gpuchain_staking::{StakingRead, StakingWrite};
use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::{SlashingError, UnjailEvent};

pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
) -> Result<(), SlashingError> {
    let mut validator = state
        .validator(signer)
        .ok_or(SlashingError::NotAValidator(*signer))?;
    if validator.tombstoned {
        return Err(SlashingError::Tombstoned(*signer));
    }
    if !validator.jailed {
        return Err(SlashingError::NotJailed(*signer));
    }
    if ctx.height < validator.jailed_until {
        return Err(SlashingError::StillJailed {
            until: validator.jailed_until,
            height: ctx.height,
        });
    }
    let min = state.staking_params().min_self_bond;
    if validator.bonded < min {
        return Err(SlashingError::BelowMinSelfBond {
            bond: validator.bonded,
            min,
        });
    }
    validator.jailed = false;
    state.put_validator(&validator);
    state.emit(UnjailEvent { operator: *signer }.into());
    Ok(())
}
