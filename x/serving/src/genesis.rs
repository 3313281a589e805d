use gpuchain_types::{Address, StateWrite};
use gpuchain_verify::VerifyRead;
use serde::{Deserialize, Serialize};

use crate::handler::models::sorted;
use crate::{ServingError, ServingParams, ServingWrite};

/// The serving section of the app genesis: parameters, and the models genesis verifiers
/// judge (no order exists at genesis).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServingGenesis {
    /// Parameters.
    #[serde(default)]
    pub params: ServingParams,
    /// The serving models each of these verifiers judges, as `serving models` declares them.
    #[serde(default)]
    pub judges: Vec<GenesisJudge>,
}

/// A verifier's serving models at genesis.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenesisJudge {
    /// The verifier.
    pub verifier: Address,
    /// blake3 of each model's weights.
    #[serde(with = "crate::msgs::hex_list")]
    pub models: Vec<[u8; 32]>,
}

impl ServingGenesis {
    /// Validates and stores the parameters and the verifiers' models.
    pub fn apply(&self, state: &mut impl StateWrite) -> Result<(), ServingError> {
        self.params.validate()?;
        state.put_serving_params(&self.params);
        for (i, judge) in self.judges.iter().enumerate() {
            let bad = |why: &str| {
                ServingError::InvalidParams(format!("genesis judge {}: {why}", judge.verifier))
            };
            if state.verifier(&judge.verifier).is_none() {
                return Err(bad("not a genesis verifier"));
            }
            if self
                .judges
                .iter()
                .take(i)
                .any(|j| j.verifier == judge.verifier)
            {
                return Err(bad("listed twice"));
            }
            state.put_serving_judged_models(&judge.verifier, &sorted(&judge.models)?);
        }
        Ok(())
    }
}
