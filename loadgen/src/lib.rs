//! A load generator that holds the chain to its engine: it replays a pre-built transaction
//! file against any CometBFT node's RPC (`broadcast_tx_sync`), at a fixed offered rate or
//! as fast as its connections allow, and reports the committed tx/s, the latency from each
//! transaction's *scheduled* send time to the block that committed it (so back-pressure in
//! the RPC shows as latency instead of a quietly lower rate), and the CPU every named
//! process used. It knows nothing of gpuchain's transactions: the same run measures gpuchain
//! and CometBFT's own `kvstore` app.

pub mod cpu;
mod http;
pub mod replay;
pub mod txfile;

pub use replay::{run, Plan, Report};
pub use txfile::Tx;
