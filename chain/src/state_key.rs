//! Chain-level state keys (the `chain/` and `tx/` prefixes; an account's nonce lives in its
//! bank account record). Part of the public state API documented in docs/protocol.md.

/// The chain id set at InitChain: borsh `String`.
pub fn chain_id() -> &'static str {
    "chain/chain_id"
}

/// Height of the last executed block: borsh `u64`. Written every block, so every height
/// has its own tree version.
pub fn height() -> &'static str {
    "chain/height"
}

/// Transaction parameters: borsh `TxParams`.
pub fn tx_params() -> &'static str {
    "tx/params"
}
