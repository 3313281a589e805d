use gpuchain_auction::AuctionGenesis;
use gpuchain_bank::BankGenesis;
use gpuchain_reputation::ReputationGenesis;
use gpuchain_serving::ServingGenesis;
use gpuchain_slashing::SlashingGenesis;
use gpuchain_staking::StakingGenesis;
use gpuchain_tx::TxParams;
use gpuchain_verify::VerifyGenesis;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The application's genesis state, carried as `app_state` in CometBFT's genesis.json.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppGenesis {
    /// Transaction limits and gas prices.
    #[serde(default)]
    pub tx: TxParams,
    /// Balances and bank parameters.
    #[serde(default)]
    pub bank: BankGenesis,
    /// Validators, providers and staking parameters.
    #[serde(default)]
    pub staking: StakingGenesis,
    /// Slashing parameters.
    #[serde(default)]
    pub slashing: SlashingGenesis,
    /// Reputation parameters.
    #[serde(default)]
    pub reputation: ReputationGenesis,
    /// Market parameters (no orders exist at genesis).
    #[serde(default)]
    pub auction: AuctionGenesis,
    /// Verifiers and verification parameters.
    #[serde(default)]
    pub verify: VerifyGenesis,
    /// Serving parameters (no serving order exists at genesis).
    #[serde(default)]
    pub serving: ServingGenesis,
    /// A running chain's whole state, written by `gpuchaind export`; when present the
    /// sections above stay empty and the new chain starts at `height + 1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exported: Option<ExportedState>,
}

/// Every key and value of a chain's state at one height (the stored objects'
/// borsh encodings that docs/protocol.md describes, in hex), with the app hash they make.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportedState {
    /// The height whose state this is; the new chain's `initial_height` is one more.
    pub height: u64,
    /// The chain it came from.
    pub chain_id: String,
    /// The app hash of that height: a new chain with the same id must reproduce it.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub app_hash: [u8; 32],
    /// State key → value, hex.
    pub state: BTreeMap<String, String>,
}

impl ExportedState {
    /// The state as raw entries, in key order.
    pub fn entries(&self) -> Result<Vec<(String, Vec<u8>)>, String> {
        self.state
            .iter()
            .map(|(k, v)| {
                hex::decode(v)
                    .map(|v| (k.clone(), v))
                    .map_err(|e| format!("exported state key {k}: value is not hex: {e}"))
            })
            .collect()
    }

    /// Builds the document from raw entries.
    pub fn from_entries(
        height: u64,
        chain_id: &str,
        app_hash: [u8; 32],
        entries: &[(String, Vec<u8>)],
    ) -> ExportedState {
        ExportedState {
            height,
            chain_id: chain_id.to_string(),
            app_hash,
            state: entries
                .iter()
                .map(|(k, v)| (k.clone(), hex::encode(v)))
                .collect(),
        }
    }
}

impl AppGenesis {
    /// Parses `app_state` bytes; an empty document means all defaults.
    pub fn from_json(bytes: &[u8]) -> Result<AppGenesis, serde_json::Error> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(AppGenesis::default());
        }
        serde_json::from_slice(bytes)
    }
}
