use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::{ProviderDeregisteredEvent, StakingError, StakingRead, StakingWrite, UnbondingKind};

pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
) -> Result<(), StakingError> {
    let provider = state
        .provider(signer)
        .ok_or(StakingError::NotAProvider(*signer))?;
    let open_leases = state.open_leases(signer);
    if open_leases > 0 {
        return Err(StakingError::ProviderHasOpenLeases {
            provider: *signer,
            open_leases,
        });
    }
    if provider.is_jailed(ctx.height) {
        return Err(StakingError::ProviderJailed {
            provider: *signer,
            until: provider.jailed_until,
        });
    }
    if provider.bonded > 0 {
        state.begin_unbonding(signer, UnbondingKind::Provider, provider.bonded, ctx.height)?;
    }
    state.delete_provider(signer);
    state.emit(
        ProviderDeregisteredEvent {
            operator: *signer,
            unbonding: provider.bonded,
        }
        .into(),
    );
    Ok(())
}
