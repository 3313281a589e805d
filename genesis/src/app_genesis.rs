use gpuchain_auction::AuctionGenesis;
use gpuchain_bank::BankGenesis;
use gpuchain_reputation::ReputationGenesis;
use gpuchain_slashing::SlashingGenesis;
use gpuchain_staking::StakingGenesis;
use gpuchain_tx::TxParams;
use gpuchain_verify::VerifyGenesis;
use serde::{Deserialize, Serialize};

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
