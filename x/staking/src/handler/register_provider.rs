use gpuchain_bank::BankWrite;
use gpuchain_types::{Address, BlockCtx, StateWrite};

use super::{can_pay, positive};
use crate::{
    module_account, MsgRegisterProvider, Provider, ProviderRegisteredEvent, StakingError,
    StakingParams, StakingRead, StakingWrite,
};

pub(super) fn check_stateless(
    msg: &MsgRegisterProvider,
    params: &StakingParams,
) -> Result<(), StakingError> {
    msg.attrs.validate(params)?;
    positive(msg.bond)
}

pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &MsgRegisterProvider,
) -> Result<(), StakingError> {
    register(state, ctx.height, signer, msg)
}

/// Shared with genesis: every stateful check, then the bond and the record.
pub(crate) fn register(
    state: &mut impl StateWrite,
    height: u64,
    signer: &Address,
    msg: &MsgRegisterProvider,
) -> Result<(), StakingError> {
    let params = state.staking_params();
    if state.provider(signer).is_some() {
        return Err(StakingError::ProviderExists(*signer));
    }
    if msg.bond < params.min_provider_stake {
        return Err(StakingError::BelowMinProviderStake {
            bond: msg.bond,
            min: params.min_provider_stake,
        });
    }
    can_pay(state, signer, msg.bond)?;
    state.transfer(signer, &module_account::bonded_pool(), msg.bond)?;
    let provider = Provider {
        operator: *signer,
        attrs: msg.attrs.clone(),
        bonded: msg.bond,
        jailed_until: 0,
        registered_height: height,
    };
    state.put_provider(&provider);
    state.emit(
        ProviderRegisteredEvent {
            operator: *signer,
            bonded: msg.bond,
            gpu_model: msg.attrs.gpu_model.clone(),
            region: msg.attrs.region.clone(),
        }
        .into(),
    );
    Ok(())
}
