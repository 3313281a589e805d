use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_types::Amount;
use serde::{Deserialize, Serialize};

use crate::StakingError;

/// Largest `max_validators` a genesis may set (bounds end-block work and total power).
pub const MAX_VALIDATORS_LIMIT: u32 = 1_000;

/// Staking parameters.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StakingParams {
    /// Blocks an unbonding waits before its funds are released.
    pub unbonding_blocks: u64,
    /// Size cap of the active validator set.
    pub max_validators: u32,
    /// ugpu per unit of voting power.
    pub power_reduction: Amount,
    /// Least self-bond of a validator (at creation, after a partial unbond, to unjail).
    pub min_self_bond: Amount,
    /// Least bond of a provider at registration and while it has open leases.
    pub min_provider_stake: Amount,
    /// Longest moniker in bytes.
    pub max_moniker_len: u32,
    /// Longest free-text provider attribute (GPU model, driver, region) in bytes.
    pub max_attr_len: u32,
    /// Longest endpoint URL in bytes.
    pub max_url_len: u32,
    /// Most GPUs one provider may declare.
    pub max_gpu_count: u32,
}

impl Default for StakingParams {
    fn default() -> Self {
        StakingParams {
            unbonding_blocks: 100,
            max_validators: 50,
            power_reduction: 1_000_000,
            min_self_bond: 1_000_000,
            min_provider_stake: 1_000_000_000,
            max_moniker_len: 64,
            max_attr_len: 64,
            max_url_len: 256,
            max_gpu_count: 64,
        }
    }
}

impl StakingParams {
    /// Rejects parameters the module cannot run with.
    pub fn validate(&self) -> Result<(), StakingError> {
        let bad = |what: &str| Err(StakingError::InvalidParams(what.to_string()));
        if self.max_validators == 0 || self.max_validators > MAX_VALIDATORS_LIMIT {
            return bad("max_validators must be 1..=1000");
        }
        if self.power_reduction == 0 {
            return bad("power_reduction must be positive");
        }
        if self.min_self_bond == 0 {
            return bad("min_self_bond must be positive");
        }
        if self.max_moniker_len == 0 || self.max_attr_len == 0 || self.max_url_len < 8 {
            return bad("string limits too small");
        }
        if self.max_gpu_count == 0 {
            return bad("max_gpu_count must be positive");
        }
        Ok(())
    }
}
