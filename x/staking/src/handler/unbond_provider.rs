use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::{MsgUnbondProvider, StakingError, StakingRead, StakingWrite, UnbondingKind};

/// A provider without open leases may unbond down to zero (it stops being eligible below
/// `min_provider_stake`); one with open leases must stay at or above the minimum.
pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &MsgUnbondProvider,
) -> Result<(), StakingError> {
    let params = state.staking_params();
    let mut provider = state
        .provider(signer)
        .ok_or(StakingError::NotAProvider(*signer))?;
    let remaining =
        provider
            .bonded
            .checked_sub(msg.amount)
            .ok_or(StakingError::InsufficientBond {
                bonded: provider.bonded,
                requested: msg.amount,
            })?;
    let open_leases = state.open_leases(signer);
    if open_leases > 0 && remaining < params.min_provider_stake {
        return Err(StakingError::UnbondBelowMinWithOpenLeases {
            remaining,
            min: params.min_provider_stake,
            open_leases,
        });
    }
    state.begin_unbonding(signer, UnbondingKind::Provider, msg.amount, ctx.height)?;
    provider.bonded = remaining;
    state.put_provider(&provider);
    Ok(())
}
