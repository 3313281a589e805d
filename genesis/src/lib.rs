//! Genesis for gpuchain: the application's genesis state (`app_state` in CometBFT's
//! genesis.json), its defaults, and the localnet builder that writes N validator homes
//! (CometBFT config, keys, genesis) on distinct 127.0.0.1 ports.

mod app_genesis;
mod cometbft;
mod localnet;

pub use app_genesis::{AppGenesis, ExportedState};
pub use cometbft::{
    exported_genesis_json, genesis_validator_entry, node_id, validator_address, CometKeys,
};
pub use localnet::{
    Localnet, LocalnetNode, LocalnetSpec, PORTS_PER_NODE, VALIDATOR_ACCOUNT_FUNDS,
    VALIDATOR_SELF_BOND,
};
