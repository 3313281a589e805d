use gpuchain_types::{Address, Amount, StateWrite};
use serde::{Deserialize, Serialize};

use crate::{BankError, BankParams, BankWrite};

/// Initial balances and parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BankGenesis {
    /// Module parameters.
    #[serde(default)]
    pub params: BankParams,
    /// Starting balances; the supply is their sum.
    pub balances: Vec<(Address, Amount)>,
}

impl BankGenesis {
    /// Writes the genesis balances and supply.
    pub fn apply(&self, state: &mut impl StateWrite) -> Result<(), BankError> {
        state.put_bank_params(&self.params);
        for (address, amount) in &self.balances {
            state.mint(address, *amount)?;
        }
        Ok(())
    }
}
