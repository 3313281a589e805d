use gpuchain_bank::BankWrite;
use gpuchain_types::{Address, StateWrite};

use super::can_pay;
use crate::{
    module_account, MsgRegisterVerifier, Verifier, VerifierRegisteredEvent, VerifyError,
    VerifyParams, VerifyRead, VerifyWrite,
};

pub(crate) fn check_stateless(
    msg: &MsgRegisterVerifier,
    params: &VerifyParams,
) -> Result<(), VerifyError> {
    if msg.bond == 0 {
        return Err(VerifyError::ZeroAmount);
    }
    if msg.bond < params.min_verifier_stake {
        return Err(VerifyError::BelowMinStake {
            bond: msg.bond,
            min: params.min_verifier_stake,
        });
    }
    Ok(())
}

/// Registers `signer` with its bond (also used by genesis).
pub(crate) fn execute(
    state: &mut impl StateWrite,
    height: u64,
    signer: &Address,
    msg: &MsgRegisterVerifier,
) -> Result<(), VerifyError> {
    check_stateless(msg, &state.verify_params())?;
    if state.verifier(signer).is_some() {
        return Err(VerifyError::VerifierExists(*signer));
    }
    can_pay(state, signer, msg.bond)?;
    state.transfer(signer, &module_account::verify_bonded(), msg.bond)?;
    state.put_verifier(&Verifier {
        operator: *signer,
        bonded: msg.bond,
        jailed_until: 0,
        registered_height: height,
        open_cases: 0,
        open_challenges: 0,
        verdicts: 0,
        misses: 0,
        overturned: 0,
    });
    state.emit(
        VerifierRegisteredEvent {
            verifier: *signer,
            bond: msg.bond,
        }
        .into(),
    );
    Ok(())
}
