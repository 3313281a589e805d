//! Bank state keys. The chain state is a public API: these strings are documented in
//! docs/protocol.md and must not change.

use gpuchain_types::Address;

/// One account's balance and nonce: borsh [`crate::Account`] (absent = both zero).
pub fn account(address: &Address) -> String {
    address.key_under("bank/accounts/")
}

/// The account that first paid `address`: borsh [`Address`], written once when the
/// account is first funded by a transfer (absent for genesis balances and mints).
pub fn funder(address: &Address) -> String {
    address.key_under("bank/funders/")
}

/// Prefix of all accounts.
pub fn accounts_prefix() -> &'static str {
    "bank/accounts/"
}

/// Total supply: borsh `u128`.
pub fn supply() -> &'static str {
    "bank/supply"
}

/// Module parameters: borsh [`crate::BankParams`].
pub fn params() -> &'static str {
    "bank/params"
}
