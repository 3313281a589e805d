//! Chain-level state keys (the `chain/`, `auth/` and `tx/` prefixes). Part of the public
//! state API documented in docs/protocol.md.

use gpuchain_types::Address;

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

/// Next nonce of an account: borsh `u64` (absent = 0).
pub fn nonce(address: &Address) -> String {
    address.key_under("auth/nonces/")
}
