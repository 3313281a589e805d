use gpuchain_types::{Address, Amount, StateWrite};

use crate::{BankError, BankParams, BankRead, BankWrite, MsgMultiSend};

pub(super) fn check_stateless(msg: &MsgMultiSend, params: &BankParams) -> Result<(), BankError> {
    let count = msg.outputs.len();
    let max = params.max_multi_send_outputs;
    if count == 0 || u32::try_from(count).map_or(true, |c| c > max) {
        return Err(BankError::OutputCount { got: count, max });
    }
    total(msg)?;
    if msg.outputs.iter().any(|o| o.amount == 0) {
        return Err(BankError::ZeroAmount);
    }
    Ok(())
}

fn total(msg: &MsgMultiSend) -> Result<Amount, BankError> {
    msg.outputs
        .iter()
        .try_fold(0u128, |acc, o| acc.checked_add(o.amount))
        .ok_or(BankError::Overflow)
}

pub(super) fn execute(
    state: &mut impl StateWrite,
    signer: &Address,
    msg: &MsgMultiSend,
) -> Result<(), BankError> {
    let required = total(msg)?;
    let available = state.balance(signer);
    if available < required {
        return Err(BankError::InsufficientFunds {
            address: *signer,
            available,
            required,
        });
    }
    for output in &msg.outputs {
        state.transfer(signer, &output.to, output.amount)?;
    }
    Ok(())
}
