//! What the provider and verifier agents' TOML configuration files share: the `[chain]` and
//! `[key]` sections, and reading and writing the file.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// `[chain]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainConfig {
    /// CometBFT RPC, e.g. `http://127.0.0.1:26657`.
    pub node: String,
    /// Websocket URL; derived from `node` when absent.
    #[serde(default)]
    pub websocket: Option<String>,
}

impl ChainConfig {
    /// The websocket URL to follow.
    pub fn websocket_url(&self) -> String {
        self.websocket
            .clone()
            .unwrap_or_else(|| gpuchain_client::follow::websocket_url(&self.node))
    }
}

/// `[key]`: a gpuchaind key file `<home>/keys/<name>.json`; an encrypted key reads its
/// passphrase from `GPUCHAIN_PASSPHRASE`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyConfig {
    /// gpuchaind home holding `keys/`.
    pub home: PathBuf,
    /// Key name of the agent's account.
    pub name: String,
}

/// An agent's configuration file: where its data lives, and how it is written.
pub trait AgentConfig: Serialize + Sized {
    /// Local state (`state.json`) and the blob store (`blobs/`).
    fn data_dir(&self) -> &Path;

    /// `state.json`.
    fn state_path(&self) -> PathBuf {
        self.data_dir().join("state.json")
    }

    /// The blob store directory.
    fn blob_dir(&self) -> PathBuf {
        self.data_dir().join("blobs")
    }

    /// Writes the file (refuses to overwrite unless `force`).
    fn save(&self, path: &Path, force: bool) -> Result<()> {
        write_toml(self, path, force)
    }
}

/// Reads and parses a TOML file, naming it in errors.
pub fn read_toml<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading config {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("parsing config {}", path.display()))
}

/// Writes `value` as TOML, creating the parent directory; refuses to overwrite unless `force`.
pub fn write_toml<T: Serialize>(value: &T, path: &Path, force: bool) -> Result<()> {
    anyhow::ensure!(
        force || !path.exists(),
        "{} exists; pass --force to overwrite",
        path.display()
    );
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, toml::to_string_pretty(value)?)
        .with_context(|| format!("writing {}", path.display()))
}
