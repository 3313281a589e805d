//! Driving `gpuchain-verifier` agents from end-to-end tests: the binary beside `gpuchaind`,
//! a config file per agent, registration and a running [`VerifierAgent`]; and provider configs
//! with a region and backend of their own, so that test orders can be routed to one agent
//! (an order's region requirement) and honest agents run on different backends.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::agent::{Agent, AgentBinary};
use crate::AgentSpec;

/// The `gpuchain-verifier` binary an agent runs.
pub struct VerifierBinary;

impl AgentBinary for VerifierBinary {
    const ROLE: &'static str = "verifier";
}

/// A running `gpuchain-verifier` agent; killed on drop.
pub type VerifierAgent = Agent<VerifierBinary>;

impl VerifierAgent {
    /// Starts `gpuchain-verifier run --config <config> --log-format json`.
    pub fn spawn(config: &Path) -> Result<VerifierAgent> {
        VerifierAgent::spawn_with(config, &[])
    }

    /// [`VerifierAgent::spawn`] with `extra` arguments (e.g. `--rubber-stamp`).
    pub fn spawn_with(config: &Path, extra: &[&str]) -> Result<VerifierAgent> {
        Agent::start(config, extra)
    }

    /// The Prometheus URL its config names.
    pub fn metrics_url(&self) -> Result<String> {
        let text = std::fs::read_to_string(&self.config)?;
        let listen = text
            .lines()
            .find_map(|l| l.strip_prefix("metrics_listen = "))
            .map(|v| v.trim_matches('"').to_string())
            .ok_or_else(|| anyhow::anyhow!("no metrics_listen in {}", self.config.display()))?;
        Ok(format!("http://{listen}/metrics"))
    }
}

/// Writes a provider config like [`AgentSpec::write_config`] with its own `region` and
/// `backend` (`cpu`, `canonical`, …).
pub fn write_provider_config(spec: &AgentSpec, region: &str, backend: &str) -> Result<PathBuf> {
    let path = spec.write_config()?;
    let text = std::fs::read_to_string(&path)?
        .replace("region = \"local\"", &format!("region = \"{region}\""))
        .replace("backend = \"auto\"", &format!("backend = \"{backend}\""));
    std::fs::write(&path, text)?;
    Ok(path)
}

/// Settings of a verifier's config file.
pub struct VerifierSpec {
    /// Node RPC URL.
    pub node: String,
    /// gpuchaind home with `keys/`.
    pub keys_home: PathBuf,
    /// Key name.
    pub key: String,
    /// Directory for its config, state, blobs and log.
    pub dir: PathBuf,
    /// Metrics port (127.0.0.1).
    pub metrics_port: u16,
    /// First-round backend.
    pub backend: String,
    /// Bond at registration.
    pub bond: u128,
    /// A raw `[challenge]` section (empty: no ringers).
    pub challenge: String,
}

impl VerifierSpec {
    /// Writes `<dir>/verifier.toml` and returns its path.
    pub fn write_config(&self) -> Result<PathBuf> {
        let sections = format!(
            r#"[verifier]
data_dir = "{data}"
metrics_listen = "127.0.0.1:{metrics}"
bond = {bond}
backend = "{backend}"
fetch_timeout_secs = 30
allow_private_blob_hosts = true

{challenge}
"#,
            data = self.dir.join("data").display(),
            metrics = self.metrics_port,
            bond = self.bond,
            backend = self.backend,
            challenge = self.challenge,
        );
        VerifierAgent::write_config(&self.dir, &self.node, &self.keys_home, &self.key, &sections)
    }
}
