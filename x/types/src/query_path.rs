//! The ABCI query paths the app serves (docs/protocol.md, "Queries"): one list that the app
//! matches and the client builds, so a renamed path fails to compile on both sides at once.

use crate::Address;

/// A raw state key: `/store/<key>` (with a Merkle proof when asked).
pub const STORE: &str = "/store/";
/// An account's record (balance and nonce): `/bank/account/<address>`.
pub const ACCOUNT: &str = "/bank/account/";
/// Total supply.
pub const SUPPLY: &str = "/bank/supply";
/// The next nonce of an account: `/auth/nonce/<address>`.
pub const NONCE: &str = "/auth/nonce/";
/// Every key and value under a prefix: `/prefix/<prefix>` (bounded; no proof).
pub const PREFIX: &str = "/prefix/";
/// The transaction parameters in force.
pub const TX_PARAMS: &str = "/tx/params";

/// The path of raw state key `key`.
pub fn store(key: &str) -> String {
    format!("{STORE}{key}")
}

/// The path of an account's record.
pub fn account(address: &Address) -> String {
    format!("{ACCOUNT}{address}")
}

/// The path of an account's next nonce.
pub fn nonce(address: &Address) -> String {
    format!("{NONCE}{address}")
}

/// The path listing every key under `prefix`.
pub fn prefix(prefix: &str) -> String {
    format!("{PREFIX}{prefix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_paths_start_with_the_prefixes_the_app_matches() {
        let a = Address([1; 20]);
        assert_eq!(store("bank/supply"), "/store/bank/supply");
        assert!(account(&a).strip_prefix(ACCOUNT) == Some(a.to_string().as_str()));
        assert!(nonce(&a).strip_prefix(NONCE) == Some(a.to_string().as_str()));
        assert_eq!(prefix("auction/orders/"), "/prefix/auction/orders/");
    }
}
