use gpuchain_bank::BankWrite;
use gpuchain_types::{Address, StateWrite};

use super::can_pay;
use crate::{
    module_account, MsgDelegateSelf, StakingError, StakingRead, StakingWrite, ValidatorBondedEvent,
};

pub(super) fn execute(
    state: &mut impl StateWrite,
    signer: &Address,
    msg: &MsgDelegateSelf,
) -> Result<(), StakingError> {
    let params = state.staking_params();
    let mut validator = state
        .validator(signer)
        .ok_or(StakingError::NotAValidator(*signer))?;
    if validator.tombstoned {
        return Err(StakingError::ValidatorTombstoned(*signer));
    }
    let bonded = validator
        .bonded
        .checked_add(msg.amount)
        .ok_or(StakingError::Overflow)?;
    if bonded < params.min_self_bond {
        return Err(StakingError::BelowMinSelfBond {
            bond: bonded,
            min: params.min_self_bond,
        });
    }
    can_pay(state, signer, msg.amount)?;
    state.transfer(signer, &module_account::bonded_pool(), msg.amount)?;
    validator.bonded = bonded;
    state.put_validator(&validator);
    state.emit(
        ValidatorBondedEvent {
            operator: *signer,
            amount: msg.amount,
            bonded,
        }
        .into(),
    );
    Ok(())
}
