//! The gpuchain client library, used by the CLI, the provider and verifier agents and the
//! tests: key files, transaction building and signing, CometBFT RPC (through cosmrs's
//! tendermint-rpc) and typed queries whose Merkle proofs are checked against the app hash of a header the
//! light client verified.

pub mod follow;
pub mod keys;
pub mod light;
mod proof;
mod rpc;

pub use light::{LightClient, LightError};
pub use proof::{verify_proof, ProofError};
pub use rpc::{ChainClient, TxOutcome, VerifiedValue};

/// Query paths served by the app (the list the app itself matches, from x/types).
pub use gpuchain_types::query_path as paths;
