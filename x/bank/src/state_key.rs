//! Bank state keys. The chain state is a public API: these strings are documented in
//! docs/protocol.md and must not change.

use gpuchain_types::Address;

/// Balance of one account: borsh `u128`.
pub fn balance(address: &Address) -> String {
    address.key_under("bank/balances/")
}

/// Prefix of all balances.
pub fn balances_prefix() -> &'static str {
    "bank/balances/"
}

/// Total supply: borsh `u128`.
pub fn supply() -> &'static str {
    "bank/supply"
}

/// Module parameters: borsh [`crate::BankParams`].
pub fn params() -> &'static str {
    "bank/params"
}
