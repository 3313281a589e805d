use gpuchain_types::StateWrite;
use serde::{Deserialize, Serialize};

use crate::{ReputationError, ReputationParams, ReputationWrite};

/// Reputation's part of the genesis file. Every provider starts neutral.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReputationGenesis {
    /// Module parameters.
    #[serde(default)]
    pub params: ReputationParams,
}

impl ReputationGenesis {
    /// Validates and stores the parameters.
    pub fn apply(&self, state: &mut impl StateWrite) -> Result<(), ReputationError> {
        self.params.validate()?;
        state.put_reputation_params(&self.params);
        Ok(())
    }
}
