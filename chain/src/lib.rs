//! The gpuchain ABCI application: decodes and authenticates transactions, routes messages to
//! the `x/` modules, and commits state to RocksDB under a Merkle app hash. Only this crate
//! knows ABCI; `gpuchaind` (src/main.rs) wraps it with the node and client CLI.

pub mod app;
pub mod config;
pub mod node_metrics;
pub mod state_key;
pub mod store;

pub use app::{execute_block, App, BlockInput, BlockOutcome, TxResult};
pub use store::Store;
