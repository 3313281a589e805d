//! Genesis for gpuchain: the application's genesis state (`app_state` in CometBFT's
//! genesis.json), its defaults, and CometBFT's files that describe a chain (keys, node ids,
//! genesis.json). The localnet builder that writes whole validator homes with funded keys
//! lives above the client, in node/.

mod app_genesis;
mod cometbft;

pub use app_genesis::{AppGenesis, ExportedState};
pub use cometbft::{
    exported_genesis_json, genesis_json, genesis_validator, genesis_validator_entry, node_id,
    validator_address, CometKeys,
};
