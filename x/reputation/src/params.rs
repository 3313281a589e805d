use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_types::{Amount, Ppm, PPM_ONE};
use serde::{Deserialize, Serialize};

use crate::ReputationError;

/// Reputation parameters.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReputationParams {
    /// Blocks over which the distance to neutral halves (0: no decay).
    pub half_life_blocks: u64,
    /// Share of the distance to 1,000,000 an accepted result adds.
    pub accepted_up_ppm: Ppm,
    /// Share of the distance to 1,000,000 a passed challenge adds.
    pub challenge_up_ppm: Ppm,
    /// Share of the score a proven fault takes away.
    pub fault_down_ppm: Ppm,
    /// Share of the score a missed deadline takes away.
    pub missed_down_ppm: Ppm,
    /// History entries kept per provider (older ones are deleted).
    pub max_history: u64,
    /// Price, ugpu, at which an accepted result or a passed challenge counts fully; cheaper
    /// work counts in proportion, so reputation cannot be farmed with near-free self-orders.
    pub full_credit_value: Amount,
}

impl Default for ReputationParams {
    fn default() -> Self {
        ReputationParams {
            half_life_blocks: 100_000,
            accepted_up_ppm: 50_000,
            challenge_up_ppm: 100_000,
            fault_down_ppm: 500_000,
            missed_down_ppm: 200_000,
            max_history: 100,
            full_credit_value: 1_000_000,
        }
    }
}

impl ReputationParams {
    /// Rejects parameters the module cannot run with.
    pub fn validate(&self) -> Result<(), ReputationError> {
        let ppms = [
            self.accepted_up_ppm,
            self.challenge_up_ppm,
            self.fault_down_ppm,
            self.missed_down_ppm,
        ];
        if ppms.iter().any(|p| *p > PPM_ONE) {
            return Err(ReputationError::InvalidParams(
                "step fractions must be at most 1000000 ppm".into(),
            ));
        }
        if self.full_credit_value == 0 {
            return Err(ReputationError::InvalidParams(
                "full_credit_value must be positive".into(),
            ));
        }
        if self.max_history == 0 || self.max_history > 10_000 {
            return Err(ReputationError::InvalidParams(
                "max_history must be 1..=10000".into(),
            ));
        }
        Ok(())
    }

    /// These parameters with the up steps scaled to work worth `value` ugpu: in proportion
    /// up to `full_credit_value`, fully above it. Down steps are never scaled: a fault on
    /// cheap work costs as much as on dear work.
    pub fn for_value(&self, value: Amount) -> ReputationParams {
        let full = self.full_credit_value.max(1);
        let scale = |ppm: Ppm| {
            let scaled = u128::from(ppm)
                .saturating_mul(value.min(full))
                .checked_div(full)
                .unwrap_or(0);
            Ppm::try_from(scaled).unwrap_or(ppm)
        };
        ReputationParams {
            accepted_up_ppm: scale(self.accepted_up_ppm),
            challenge_up_ppm: scale(self.challenge_up_ppm),
            ..self.clone()
        }
    }
}
