//! x/staking: who may validate and who may sell compute. Validators bond `ugpu` against an
//! ed25519 consensus key; their voting power is the bond divided by `power_reduction`, and
//! [`end_block`] returns the changes to CometBFT's validator set (the top `max_validators`
//! by power among validators that are neither jailed nor tombstoned). Providers register
//! their hardware and bond at least `min_provider_stake` before they may bid. Both kinds of
//! bond sit in the `bonded_pool` module account; unbonding moves them to `unbonding_pool`
//! for `unbonding_blocks`, after which [`end_block`] pays them out. Invariants (checked by
//! the tests): `bonded_pool` holds the sum of all bonds and `unbonding_pool` the sum of the
//! queued entries.

// Consensus code never panics: bad input is an error code that changes nothing.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::todo,
        clippy::unimplemented,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )
)]

mod end_block;
mod error;
mod events;
mod genesis;
pub mod handler;
mod msgs;
mod params;
pub mod state_key;
mod validation;
mod view;

pub use end_block::end_block;
pub use error::StakingError;
pub use events::{
    ProviderBondedEvent, ProviderDeregisteredEvent, ProviderRegisteredEvent, ProviderUpdatedEvent,
    UnbondingCompletedEvent, UnbondingStartedEvent, ValidatorBondedEvent, ValidatorCreatedEvent,
    ValidatorEditedEvent, ValidatorSetChangedEvent,
};
pub use genesis::{GenesisProvider, GenesisValidator, StakingGenesis};
pub use msgs::{
    MsgBondProvider, MsgCreateValidator, MsgDelegateSelf, MsgDeregisterProvider, MsgEditValidator,
    MsgRegisterProvider, MsgUnbondProvider, MsgUnbondValidator, MsgUpdateProvider, StakingMsg,
};
pub use params::{StakingParams, MAX_VALIDATORS_LIMIT};
pub use view::{StakingRead, StakingWrite};

use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_types::{Address, Amount};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A CometBFT validator address: the first 20 bytes of sha256(ed25519 public key).
pub type ConsensusAddress = [u8; 20];

/// Most voting power one validator may have: CometBFT caps the total at `i64::MAX / 8`, and
/// the set holds at most [`params::MAX_VALIDATORS_LIMIT`] validators.
pub const MAX_VALIDATOR_POWER: u64 = 1_152_921_504_606_846;

/// Module accounts of x/staking. No key controls them; only module code moves their funds.
pub mod module_account {
    use gpuchain_types::Address;

    /// Holds every bonded validator and provider stake.
    pub fn bonded_pool() -> Address {
        Address::module("bonded_pool")
    }

    /// Holds stake that is waiting out `unbonding_blocks`.
    pub fn unbonding_pool() -> Address {
        Address::module("unbonding_pool")
    }
}

/// CometBFT's address of an ed25519 consensus key.
pub fn consensus_address(pubkey: &[u8; 32]) -> ConsensusAddress {
    let digest: [u8; 32] = Sha256::digest(pubkey).into();
    let mut out = [0u8; 20];
    for (o, d) in out.iter_mut().zip(digest) {
        *o = d;
    }
    out
}

/// A validator: an operator account with a consensus key and a self-bond.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct Validator {
    /// Account that created it and signs its transactions.
    pub operator: Address,
    /// ed25519 key CometBFT signs votes with.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub consensus_pubkey: [u8; 32],
    /// [`consensus_address`] of the key.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub consensus_address: ConsensusAddress,
    /// Display name.
    pub moniker: String,
    /// ugpu bonded (held by the bonded pool).
    pub bonded: Amount,
    /// Jailed validators are out of the set until they unjail.
    pub jailed: bool,
    /// First height at which a jailed validator may unjail.
    pub jailed_until: u64,
    /// Permanently jailed for double-signing.
    pub tombstoned: bool,
    /// Height it was created at (0 for genesis validators).
    pub created_height: u64,
}

impl Validator {
    /// Voting power: `bonded / power_reduction`, capped at [`MAX_VALIDATOR_POWER`].
    pub fn power(&self, power_reduction: Amount) -> u64 {
        let power = self.bonded.checked_div(power_reduction).unwrap_or(0);
        u64::try_from(power)
            .unwrap_or(u64::MAX)
            .min(MAX_VALIDATOR_POWER)
    }

    /// Whether it may be in the active set at all.
    pub fn is_active_candidate(&self) -> bool {
        !self.jailed && !self.tombstoned
    }
}

/// One entry of the active validator set as last reported to CometBFT.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct ActiveValidator {
    /// Operator account.
    pub operator: Address,
    /// Consensus key.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub pubkey: [u8; 32],
    /// Voting power reported to CometBFT.
    pub power: u64,
}

/// A change to CometBFT's validator set; power 0 removes the validator.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct ValidatorUpdate {
    /// ed25519 consensus key.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub pubkey: [u8; 32],
    /// New voting power.
    pub power: u64,
}

/// What kind of machine a provider sells.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    BorshSerialize,
    BorshDeserialize,
    Serialize,
    Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ProviderClass {
    /// Variant 0: one or more GPUs.
    Gpu,
    /// Variant 1: CPU only (`gpu_count` 0).
    Cpu,
}

/// Hardware a provider declares. Checked for shape by [`ProviderAttrs::validate`]; whether it
/// is true is for verification (planted challenges) to find out.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct ProviderAttrs {
    /// GPU or CPU.
    pub class: ProviderClass,
    /// GPU model as NVML names it, e.g. `"NVIDIA H200"`; empty for CPU providers.
    pub gpu_model: String,
    /// Memory per GPU in MiB (0 for CPU providers).
    pub vram_mib: u64,
    /// Number of GPUs (0 for CPU providers).
    pub gpu_count: u32,
    /// CUDA compute capability as `major * 10 + minor` (90 = 9.0); 0 for CPU providers.
    pub compute_capability: u32,
    /// Driver version string, e.g. `"550.54.15"`.
    pub driver_version: String,
    /// CUDA version NVML-style, `major * 1000 + minor * 10` (12040 = 12.4); 0 if none.
    pub cuda_version: u32,
    /// Region label, e.g. `"eu-west"`.
    pub region: String,
    /// Where the provider serves blobs and results: `http://` or `https://`.
    pub endpoint_url: String,
}

/// A registered compute provider.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct Provider {
    /// Account that registered it and signs its transactions.
    pub operator: Address,
    /// Declared hardware.
    pub attrs: ProviderAttrs,
    /// ugpu bonded (held by the bonded pool).
    pub bonded: Amount,
    /// It may not bid before this height.
    pub jailed_until: u64,
    /// Height it registered at (0 for genesis providers).
    pub registered_height: u64,
}

impl Provider {
    /// Whether it is jailed at `height`.
    pub fn is_jailed(&self, height: u64) -> bool {
        height < self.jailed_until
    }
}

/// A query filter over providers; `None` fields match everything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderFilter {
    /// Exact GPU model, compared case-insensitively.
    pub gpu_model: Option<String>,
    /// Least memory per GPU in MiB.
    pub min_vram_mib: Option<u64>,
    /// Exact region.
    pub region: Option<String>,
    /// Only this class.
    pub class: Option<ProviderClass>,
}

impl ProviderFilter {
    /// Whether `provider` passes the filter.
    pub fn matches(&self, provider: &Provider) -> bool {
        let a = &provider.attrs;
        self.gpu_model
            .as_ref()
            .is_none_or(|m| m.eq_ignore_ascii_case(&a.gpu_model))
            && self.min_vram_mib.is_none_or(|v| a.vram_mib >= v)
            && self.region.as_ref().is_none_or(|r| r == &a.region)
            && self.class.is_none_or(|c| c == a.class)
    }
}

/// Whose stake an unbonding entry returns.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum UnbondingKind {
    /// Variant 0: a validator's self-bond.
    Validator,
    /// Variant 1: a provider's bond.
    Provider,
}

/// Stake on its way out: held by `unbonding_pool` until `completion_height`.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct UnbondingEntry {
    /// Unique, increasing id.
    pub id: u64,
    /// Account that gets the funds.
    pub owner: Address,
    /// Validator or provider stake.
    pub kind: UnbondingKind,
    /// ugpu.
    pub amount: Amount,
    /// Height the unbonding started.
    pub creation_height: u64,
    /// Released by the end-block of this height.
    pub completion_height: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consensus_address_is_cometbft_sha256_prefix() {
        // sha256 of 32 zero bytes starts 66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925.
        assert_eq!(
            hex::encode(consensus_address(&[0; 32])),
            "66687aadf862bd776c8fc18b8e9f8e2008971485"
        );
    }

    #[test]
    fn max_power_keeps_a_full_set_within_cometbft_total() {
        let cometbft_max_total = u64::try_from(i64::MAX / 8).unwrap();
        let full_set = MAX_VALIDATOR_POWER
            .checked_mul(u64::from(MAX_VALIDATORS_LIMIT))
            .unwrap();
        assert!(full_set <= cometbft_max_total);
        assert!(full_set > cometbft_max_total - u64::from(MAX_VALIDATORS_LIMIT));
    }

    #[test]
    fn power_divides_by_reduction_and_is_capped() {
        let mut v = Validator {
            operator: Address([1; 20]),
            consensus_pubkey: [0; 32],
            consensus_address: [0; 20],
            moniker: "v".into(),
            bonded: 2_999_999,
            jailed: false,
            jailed_until: 0,
            tombstoned: false,
            created_height: 0,
        };
        assert_eq!(v.power(1_000_000), 2);
        v.bonded = u128::MAX;
        assert_eq!(v.power(1), MAX_VALIDATOR_POWER);
        assert_eq!(v.power(0), 0, "a zero reduction never panics");
    }
}
