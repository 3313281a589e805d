use gpuchain_types::{Address, Amount, StateWrite};
use serde::{Deserialize, Serialize};

use crate::handler::register_verifier;
use crate::{MsgRegisterVerifier, VerifyError, VerifyParams, VerifyWrite};

/// A verifier that exists from the first block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenesisVerifier {
    /// Operator account; must hold `bond` in the bank genesis.
    pub operator: Address,
    /// ugpu bonded from the operator's genesis balance.
    pub bond: Amount,
}

/// The verify module's part of the genesis file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyGenesis {
    /// Module parameters.
    #[serde(default)]
    pub params: VerifyParams,
    /// Initial verifiers.
    #[serde(default)]
    pub verifiers: Vec<GenesisVerifier>,
}

impl VerifyGenesis {
    /// Validates and stores the parameters and registers the genesis verifiers with the same
    /// checks as [`crate::MsgRegisterVerifier`] (apply the bank genesis first).
    pub fn apply(&self, state: &mut impl StateWrite) -> Result<(), VerifyError> {
        self.params.validate()?;
        state.put_verify_params(&self.params);
        for v in &self.verifiers {
            let msg = MsgRegisterVerifier { bond: v.bond };
            register_verifier::check_stateless(&msg, &self.params)?;
            register_verifier::execute(state, 0, &v.operator, &msg)?;
        }
        Ok(())
    }
}
