use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::{MsgUnbondProvider, StakingError, StakingRead, StakingWrite, UnbondingKind};

/// A provider without open leases may unbond down to zero (it stops being eligible below
/// `min_provider_stake`); one with open leases may not unbond at all. Every open lease can
/// still end in a slash, and a slash takes a share of the bond: unbonding while a result
/// awaits its audit or dispute would shrink the bond the slash is taken from.
pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &MsgUnbondProvider,
) -> Result<(), StakingError> {
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
    if open_leases > 0 {
        return Err(StakingError::UnbondWithOpenLeases { open_leases });
    }
    state.begin_unbonding(signer, UnbondingKind::Provider, msg.amount, ctx.height)?;
    provider.bonded = remaining;
    state.put_provider(&provider);
    Ok(())
}
