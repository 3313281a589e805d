//! Reputation state keys. The chain state is a public API. Numeric segments are zero-padded
//! to 20 digits so that key order is numeric order.

use gpuchain_types::Address;

/// Everything the module keeps: the prefix of all its keys.
pub fn module_prefix() -> &'static str {
    "reputation/"
}

/// Module parameters: borsh [`crate::ReputationParams`].
pub fn params() -> &'static str {
    "reputation/params"
}

/// One provider's record: borsh [`crate::Reputation`]; absent means neutral.
pub fn record(provider: &Address) -> String {
    provider.key_under("reputation/records/")
}

/// One history entry: borsh [`crate::HistoryEntry`].
pub fn history(provider: &Address, seq: u64) -> String {
    format!("reputation/history/{}/{seq:020}", provider.to_hex())
}

/// Prefix of one provider's history, oldest first.
pub fn history_prefix(provider: &Address) -> String {
    format!("reputation/history/{}/", provider.to_hex())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexicographic_order_is_numeric_order() {
        let p = Address([4; 20]);
        let numbers = [0u64, 1, 9, 10, 99, 100, u64::MAX - 1, u64::MAX];
        for pair in numbers.windows(2) {
            assert!(history(&p, pair[0]) < history(&p, pair[1]));
        }
        assert!(history(&p, 3).starts_with(&history_prefix(&p)));
        assert!(!record(&p).starts_with(&history_prefix(&p)));
    }
}
