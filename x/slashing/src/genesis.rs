use gpuchain_types::StateWrite;
use serde::{Deserialize, Serialize};

use crate::{SlashingError, SlashingParams, SlashingWrite};

/// Slashing's part of the genesis file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlashingGenesis {
    /// Module parameters.
    #[serde(default)]
    pub params: SlashingParams,
}

impl SlashingGenesis {
    /// Checks and writes the parameters.
    pub fn apply(&self, state: &mut impl StateWrite) -> Result<(), SlashingError> {
        self.params.validate()?;
        state.put_slashing_params(&self.params);
        Ok(())
    }
}
