//! Slashing state keys. The chain state is a public API: these strings are documented in
//! docs/protocol.md and must not change. Numeric segments are zero-padded to 20 digits so
//! that key order is numeric order.

use gpuchain_staking::ConsensusAddress;
use gpuchain_types::Address;

/// Everything the module keeps: the prefix of all its keys.
pub fn module_prefix() -> &'static str {
    "slashing/"
}

/// Module parameters: borsh [`crate::SlashingParams`].
pub fn params() -> &'static str {
    "slashing/params"
}

/// Liveness ring of one validator: borsh [`crate::SigningInfo`].
pub fn signing_info(address: &ConsensusAddress) -> String {
    format!("slashing/signing_info/{}", hex::encode(address))
}

/// One slash: borsh [`crate::SlashRecord`].
pub fn record(id: u64) -> String {
    format!("slashing/records/{id:020}")
}

/// Prefix of all slash records, oldest first.
pub fn records_prefix() -> &'static str {
    "slashing/records/"
}

/// Index of one subject's slashes: borsh `u64` record id.
pub fn record_by_subject(subject: &Address, id: u64) -> String {
    format!("slashing/records_by_subject/{}/{id:020}", subject.to_hex())
}

/// Prefix of one subject's slash index.
pub fn records_by_subject_prefix(subject: &Address) -> String {
    format!("slashing/records_by_subject/{}/", subject.to_hex())
}

/// Next slash record id: borsh `u64`.
pub fn next_record_id() -> &'static str {
    "slashing/next_record_id"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexicographic_order_is_numeric_order() {
        let numbers = [0u64, 1, 9, 10, 99, 100, 65_536, u64::MAX - 1, u64::MAX];
        let subject = Address([5; 20]);
        for pair in numbers.windows(2) {
            assert!(record(pair[0]) < record(pair[1]));
            assert!(record_by_subject(&subject, pair[0]) < record_by_subject(&subject, pair[1]));
        }
        assert!(record(3).starts_with(records_prefix()));
        assert!(!record_by_subject(&subject, 3).starts_with(records_prefix()));
        assert!(record_by_subject(&subject, 3).starts_with(&records_by_subject_prefix(&subject)));
    }
}
