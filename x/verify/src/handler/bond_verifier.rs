use gpuchain_bank::BankWrite;
use gpuchain_types::{Address, StateWrite};

use super::can_pay;
use crate::{
    module_account, MsgBondVerifier, VerifierBondedEvent, VerifyError, VerifyRead, VerifyWrite,
};

pub(super) fn execute(
    state: &mut impl StateWrite,
    signer: &Address,
    msg: &MsgBondVerifier,
) -> Result<(), VerifyError> {
    if msg.amount == 0 {
        return Err(VerifyError::ZeroAmount);
    }
    let mut verifier = state
        .verifier(signer)
        .ok_or(VerifyError::NotAVerifier(*signer))?;
    verifier.bonded = verifier
        .bonded
        .checked_add(msg.amount)
        .ok_or(VerifyError::Overflow)?;
    can_pay(state, signer, msg.amount)?;
    state.transfer(signer, &module_account::verify_bonded(), msg.amount)?;
    state.put_verifier(&verifier);
    state.emit(
        VerifierBondedEvent {
            verifier: *signer,
            amount: msg.amount,
            bonded: verifier.bonded,
        }
        .into(),
    );
    Ok(())
}
