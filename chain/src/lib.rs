//! The gpuchain ABCI application: decodes and authenticates transactions, routes messages to
//! the `x/` modules, and commits state to RocksDB under a Merkle app hash. Only this crate
//! and the node that serves it know ABCI; it knows nothing of RPC or the command line:
//! `gpuchaind` (node/) wraps it with the ABCI server, its metrics and the client CLI.

// Consensus code never panics: bad input is an error code that changes nothing.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::todo,
        clippy::unimplemented,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )
)]

pub mod app;
pub mod state_key;
pub mod store;

pub use app::{execute_block, App, BlockInput, BlockOutcome, TxResult};
pub use store::Store;
