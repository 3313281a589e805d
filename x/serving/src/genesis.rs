use gpuchain_types::StateWrite;
use serde::{Deserialize, Serialize};

use crate::{ServingError, ServingParams, ServingWrite};

/// The serving section of the app genesis: parameters only (no order exists at genesis).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServingGenesis {
    /// Parameters.
    #[serde(default)]
    pub params: ServingParams,
}

impl ServingGenesis {
    /// Validates and stores the parameters.
    pub fn apply(&self, state: &mut impl StateWrite) -> Result<(), ServingError> {
        self.params.validate()?;
        state.put_serving_params(&self.params);
        Ok(())
    }
}
