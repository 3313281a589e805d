//! Staking state keys. The chain state is a public API: these strings are documented in
//! docs/protocol.md and must not change. Numeric segments are zero-padded to 20 digits so
//! that key order is numeric order.

use gpuchain_types::Address;

use crate::ConsensusAddress;

/// Everything the module keeps: the prefix of all its keys.
pub fn module_prefix() -> &'static str {
    "staking/"
}

/// Module parameters: borsh [`crate::StakingParams`].
pub fn params() -> &'static str {
    "staking/params"
}

/// One validator by operator: borsh [`crate::Validator`].
pub fn validator(operator: &Address) -> String {
    operator.key_under("staking/validators/")
}

/// Prefix of all validators.
pub fn validators_prefix() -> &'static str {
    "staking/validators/"
}

/// Operator of the validator with this consensus address: borsh [`Address`].
pub fn validator_by_consensus(address: &ConsensusAddress) -> String {
    format!("staking/validators_by_consensus/{}", hex::encode(address))
}

/// One member of the active set last reported to CometBFT: borsh [`crate::ActiveValidator`].
pub fn active(address: &ConsensusAddress) -> String {
    format!("staking/active_set/{}", hex::encode(address))
}

/// Prefix of the active set.
pub fn active_prefix() -> &'static str {
    "staking/active_set/"
}

/// One provider by operator: borsh [`crate::Provider`].
pub fn provider(operator: &Address) -> String {
    operator.key_under("staking/providers/")
}

/// Prefix of all providers.
pub fn providers_prefix() -> &'static str {
    "staking/providers/"
}

/// Open leases of a provider: borsh `u64`, absent when 0.
pub fn open_leases(provider: &Address) -> String {
    provider.key_under("staking/open_leases/")
}

/// One unbonding entry, ordered by completion height then id: borsh
/// [`crate::UnbondingEntry`].
pub fn unbonding(completion_height: u64, id: u64) -> String {
    format!("staking/unbonding/{completion_height:020}/{id:020}")
}

/// Prefix of the whole unbonding queue.
pub fn unbonding_prefix() -> &'static str {
    "staking/unbonding/"
}

/// Index of one owner's unbonding entries: borsh `u64` completion height.
pub fn unbonding_by_owner(owner: &Address, id: u64) -> String {
    format!("staking/unbonding_by_owner/{}/{id:020}", owner.to_hex())
}

/// Prefix of one owner's unbonding index.
pub fn unbonding_by_owner_prefix(owner: &Address) -> String {
    format!("staking/unbonding_by_owner/{}/", owner.to_hex())
}

/// Next unbonding entry id: borsh `u64`.
pub fn next_unbonding_id() -> &'static str {
    "staking/next_unbonding_id"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexicographic_order_is_numeric_order() {
        let numbers = [0u64, 1, 9, 10, 99, 100, 12_345, u64::MAX - 1, u64::MAX];
        for pair in numbers.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            assert!(unbonding(a, 5) < unbonding(b, 0), "{a} vs {b}");
            assert!(unbonding(7, a) < unbonding(7, b), "{a} vs {b}");
            let owner = Address([3; 20]);
            assert!(unbonding_by_owner(&owner, a) < unbonding_by_owner(&owner, b));
        }
    }

    #[test]
    fn keys_stay_under_their_prefixes() {
        let a = Address([9; 20]);
        assert!(validator(&a).starts_with(validators_prefix()));
        assert!(provider(&a).starts_with(providers_prefix()));
        assert!(active(&[1; 20]).starts_with(active_prefix()));
        assert!(unbonding(1, 2).starts_with(unbonding_prefix()));
        assert!(unbonding_by_owner(&a, 2).starts_with(&unbonding_by_owner_prefix(&a)));
        assert!(!validator_by_consensus(&[1; 20]).starts_with(validators_prefix()));
    }
}
