//! CometBFT's own files that describe a chain: key JSON, node ids and genesis.json.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use base64::{engine::general_purpose::STANDARD as B64, Engine};
use ed25519_dalek::SigningKey;
use serde_json::json;

/// A node's two CometBFT keys.
pub struct CometKeys {
    /// Consensus (validator) key.
    pub validator: SigningKey,
    /// P2P identity key.
    pub node: SigningKey,
}

fn sha256_20(bytes: &[u8]) -> [u8; 20] {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(bytes);
    let mut out = [0u8; 20];
    out.copy_from_slice(&digest[..20]);
    out
}

/// CometBFT's validator address: upper-case hex of sha256(pubkey)[..20].
pub fn validator_address(key: &SigningKey) -> String {
    hex::encode_upper(sha256_20(key.verifying_key().as_bytes()))
}

/// CometBFT's node id: lower-case hex of sha256(pubkey)[..20].
pub fn node_id(key: &SigningKey) -> String {
    hex::encode(sha256_20(key.verifying_key().as_bytes()))
}

fn priv_key_b64(key: &SigningKey) -> String {
    B64.encode(key.to_keypair_bytes())
}

fn write_json(path: &Path, value: &serde_json::Value) -> Result<()> {
    fs::write(path, serde_json::to_vec_pretty(value)?)
        .with_context(|| format!("writing {}", path.display()))
}

impl CometKeys {
    /// Writes priv_validator_key.json, node_key.json and an empty priv_validator_state.json.
    pub fn write(&self, comet_home: &Path) -> Result<()> {
        let config = comet_home.join("config");
        let data = comet_home.join("data");
        fs::create_dir_all(&config)?;
        fs::create_dir_all(&data)?;
        let pubkey = B64.encode(self.validator.verifying_key().as_bytes());
        write_json(
            &config.join("priv_validator_key.json"),
            &json!({
                "address": validator_address(&self.validator),
                "pub_key": {"type": "tendermint/PubKeyEd25519", "value": pubkey},
                "priv_key": {"type": "tendermint/PrivKeyEd25519", "value": priv_key_b64(&self.validator)},
            }),
        )?;
        write_json(
            &config.join("node_key.json"),
            &json!({"priv_key": {"type": "tendermint/PrivKeyEd25519", "value": priv_key_b64(&self.node)}}),
        )?;
        let state = data.join("priv_validator_state.json");
        if !state.exists() {
            write_json(&state, &json!({"height": "0", "round": 0, "step": 0}))?;
        }
        Ok(())
    }
}

/// One validator entry of genesis.json.
pub fn genesis_validator(key: &SigningKey, power: u64, name: &str) -> serde_json::Value {
    genesis_validator_entry(key.verifying_key().as_bytes(), power, name)
}

/// One entry of genesis.json's `validators`.
pub fn genesis_validator_entry(pubkey: &[u8; 32], power: u64, name: &str) -> serde_json::Value {
    json!({
        "address": hex::encode_upper(sha256_20(pubkey)),
        "pub_key": {"type": "tendermint/PubKeyEd25519", "value": B64.encode(pubkey)},
        "power": power.to_string(),
        "name": name,
    })
}

/// The genesis.json of a chain that starts from an exported state: `source`'s genesis
/// time and consensus parameters, `initial_height` one past the exported height, and
/// `validators` (entries of [`genesis_validator_entry`]) as the starting set.
pub fn exported_genesis_json(
    source: &serde_json::Value,
    chain_id: &str,
    validators: Vec<serde_json::Value>,
    app_state: &crate::AppGenesis,
) -> Result<serde_json::Value> {
    let exported = app_state
        .exported
        .as_ref()
        .context("the app state carries no exported state")?;
    let initial_height = exported
        .height
        .checked_add(1)
        .context("exported height overflows")?;
    Ok(json!({
        "genesis_time": source.get("genesis_time").cloned().unwrap_or(json!("2026-01-01T00:00:00Z")),
        "chain_id": chain_id,
        "initial_height": initial_height.to_string(),
        "consensus_params": source.get("consensus_params").cloned().unwrap_or(json!(null)),
        "validators": validators,
        "app_hash": "",
        "app_state": serde_json::to_value(app_state)?,
    }))
}

/// genesis.json with our validators and app state.
pub fn genesis_json(
    chain_id: &str,
    validators: Vec<serde_json::Value>,
    app_state: &crate::AppGenesis,
) -> Result<serde_json::Value> {
    Ok(json!({
        "genesis_time": "2026-01-01T00:00:00Z",
        "chain_id": chain_id,
        "initial_height": "1",
        "consensus_params": {
            "block": {"max_bytes": "22020096", "max_gas": "-1"},
            "evidence": {"max_age_num_blocks": "100000", "max_age_duration": "172800000000000", "max_bytes": "1048576"},
            "validator": {"pub_key_types": ["ed25519"]},
            "version": {"app": "1"},
            "abci": {"vote_extensions_enable_height": "0"}
        },
        "validators": validators,
        "app_hash": "",
        "app_state": serde_json::to_value(app_state)?,
    }))
}
