use gpuchain_types::{Address, StateWrite};

use crate::{
    validation, MsgEditValidator, StakingError, StakingParams, StakingRead, StakingWrite,
    ValidatorEditedEvent,
};

pub(super) fn check_stateless(
    msg: &MsgEditValidator,
    params: &StakingParams,
) -> Result<(), StakingError> {
    validation::moniker(&msg.moniker, params)
}

pub(super) fn execute(
    state: &mut impl StateWrite,
    signer: &Address,
    msg: &MsgEditValidator,
) -> Result<(), StakingError> {
    let mut validator = state
        .validator(signer)
        .ok_or(StakingError::NotAValidator(*signer))?;
    validator.moniker = msg.moniker.clone();
    state.put_validator(&validator);
    state.emit(
        ValidatorEditedEvent {
            operator: *signer,
            moniker: msg.moniker.clone(),
        }
        .into(),
    );
    Ok(())
}
