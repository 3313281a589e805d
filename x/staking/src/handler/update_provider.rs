use gpuchain_types::{Address, StateWrite};

use crate::{MsgUpdateProvider, ProviderUpdatedEvent, StakingError, StakingRead, StakingWrite};

pub(super) fn execute(
    state: &mut impl StateWrite,
    signer: &Address,
    msg: &MsgUpdateProvider,
) -> Result<(), StakingError> {
    let mut provider = state
        .provider(signer)
        .ok_or(StakingError::NotAProvider(*signer))?;
    provider.attrs = msg.attrs.clone();
    state.put_provider(&provider);
    state.emit(ProviderUpdatedEvent { operator: *signer }.into());
    Ok(())
}
