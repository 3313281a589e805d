//! The gpuchain node, above the client: `gpuchaind start` serves the ABCI application
//! (`gpuchain-chain`) to CometBFT with its Prometheus metrics; the rest of `gpuchaind` is
//! the command-line client (keys, transactions, queries, the light client, export),
//! [`in_process`] serves the same app inside CometBFT's process, and
//! `gpuchaind testnet` and the end-to-end harness write localnets with [`localnet`].
//! The state machine itself knows nothing of any of this.

mod abci_server;
pub mod cli;
mod comet_config;
pub mod config;
pub mod in_process;
pub mod localnet;
pub mod metrics;
