use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::{MsgUnbondValidator, StakingError, StakingRead, StakingWrite, UnbondingKind};

/// A partial unbond must leave at least `min_self_bond`; unbonding everything is allowed and
/// takes the validator out of the set at the next end-block (its record stays, so its
/// consensus key can never be reused).
pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &MsgUnbondValidator,
) -> Result<(), StakingError> {
    let params = state.staking_params();
    let mut validator = state
        .validator(signer)
        .ok_or(StakingError::NotAValidator(*signer))?;
    let remaining =
        validator
            .bonded
            .checked_sub(msg.amount)
            .ok_or(StakingError::InsufficientBond {
                bonded: validator.bonded,
                requested: msg.amount,
            })?;
    if remaining != 0 && remaining < params.min_self_bond {
        return Err(StakingError::BelowMinSelfBond {
            bond: remaining,
            min: params.min_self_bond,
        });
    }
    state.begin_unbonding(signer, UnbondingKind::Validator, msg.amount, ctx.height)?;
    validator.bonded = remaining;
    state.put_validator(&validator);
    Ok(())
}
