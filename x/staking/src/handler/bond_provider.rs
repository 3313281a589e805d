use gpuchain_bank::BankWrite;
use gpuchain_types::{Address, StateWrite};

use super::can_pay;
use crate::{
    module_account, MsgBondProvider, ProviderBondedEvent, StakingError, StakingRead, StakingWrite,
};

pub(super) fn execute(
    state: &mut impl StateWrite,
    signer: &Address,
    msg: &MsgBondProvider,
) -> Result<(), StakingError> {
    let mut provider = state
        .provider(signer)
        .ok_or(StakingError::NotAProvider(*signer))?;
    let bonded = provider
        .bonded
        .checked_add(msg.amount)
        .ok_or(StakingError::Overflow)?;
    can_pay(state, signer, msg.amount)?;
    state.transfer(signer, &module_account::bonded_pool(), msg.amount)?;
    provider.bonded = bonded;
    state.put_provider(&provider);
    state.emit(
        ProviderBondedEvent {
            operator: *signer,
            amount: msg.amount,
            bonded,
        }
        .into(),
    );
    Ok(())
}
