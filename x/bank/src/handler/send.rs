use gpuchain_types::{Address, StateWrite};

use crate::{BankError, BankWrite, MsgSend};

pub(super) fn check_stateless(msg: &MsgSend) -> Result<(), BankError> {
    if msg.amount == 0 {
        return Err(BankError::ZeroAmount);
    }
    Ok(())
}

pub(super) fn execute(
    state: &mut impl StateWrite,
    signer: &Address,
    msg: &MsgSend,
) -> Result<(), BankError> {
    state.transfer(signer, &msg.to, msg.amount)
}
