//! The gpuchain client library, used by the CLI, the provider and verifier agents and the
//! tests: key files, transaction building and signing, CometBFT RPC (through cosmrs's
//! tendermint-rpc) and typed queries whose Merkle proofs are checked against the app hash of a header the
//! light client verified.

pub mod follow;
pub mod keys;
pub mod light;
mod proof;
mod rpc;
mod txbuild;

pub use light::{LightClient, LightError};
pub use proof::{verify_proof, ProofError};
pub use rpc::{ChainClient, TxOutcome, VerifiedValue};
pub use txbuild::build_signed_tx;

/// Query path prefixes served by the app (documented in docs/protocol.md).
pub mod paths {
    use gpuchain_types::Address;

    /// Raw state key: `/store/<key>`.
    pub fn store(key: &str) -> String {
        format!("/store/{key}")
    }

    /// An account's record (balance and nonce).
    pub fn account(address: &Address) -> String {
        format!("/bank/account/{address}")
    }

    /// Total supply.
    pub const SUPPLY: &str = "/bank/supply";
    /// Transaction parameters.
    pub const TX_PARAMS: &str = "/tx/params";

    /// Next nonce of an account.
    pub fn nonce(address: &Address) -> String {
        format!("/auth/nonce/{address}")
    }
}
