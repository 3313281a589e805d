//! Driving `gpuchain-verifier` agents from end-to-end tests: the binary beside `gpuchaind`,
//! a config file per agent, spawn / SIGTERM, `status --output json`; and provider configs
//! with a region and backend of their own, so that test orders can be routed to one agent
//! (an order's region requirement) and honest agents run on different backends.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use anyhow::{Context, Result};

use crate::{gpuchaind_path, AgentSpec};

/// `gpuchain-verifier` beside `gpuchaind` (or `GPUCHAIN_VERIFIER_BIN`).
pub fn verifier_path() -> PathBuf {
    if let Ok(p) = std::env::var("GPUCHAIN_VERIFIER_BIN") {
        return PathBuf::from(p);
    }
    gpuchaind_path().with_file_name("gpuchain-verifier")
}

/// `gpuchain-verifier register --config CONFIG`: registers and bonds the verifier on chain.
pub fn register_verifier(config: &std::path::Path) -> Result<()> {
    crate::provider::register_agent(verifier_cli, "verifier", config)
}

/// Runs `gpuchain-verifier` with `args`.
pub fn verifier_cli(args: &[&str]) -> Result<Output> {
    Command::new(verifier_path())
        .args(args)
        .output()
        .with_context(|| {
            format!(
                "running {} (cargo build --workspace)",
                verifier_path().display()
            )
        })
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
        std::fs::create_dir_all(&self.dir)?;
        let text = format!(
            r#"[chain]
node = "{node}"

[key]
home = "{home}"
name = "{key}"

[verifier]
data_dir = "{data}"
metrics_listen = "127.0.0.1:{metrics}"
bond = {bond}
backend = "{backend}"
fetch_timeout_secs = 30
allow_private_blob_hosts = true

{challenge}
"#,
            node = self.node,
            home = self.keys_home.display(),
            key = self.key,
            data = self.dir.join("data").display(),
            metrics = self.metrics_port,
            bond = self.bond,
            backend = self.backend,
            challenge = self.challenge,
        );
        let path = self.dir.join("verifier.toml");
        std::fs::write(&path, text)?;
        Ok(path)
    }
}

/// A running verifier process; killed on drop.
pub struct VerifierAgent {
    child: Option<Child>,
    /// Its config file.
    pub config: PathBuf,
    /// Its log file (JSON lines, appended across restarts).
    pub log: PathBuf,
}

impl VerifierAgent {
    /// Starts `gpuchain-verifier run --config <config> --log-format json`.
    pub fn spawn(config: &Path) -> Result<VerifierAgent> {
        VerifierAgent::spawn_with(config, &[])
    }

    /// [`VerifierAgent::spawn`] with `extra` arguments (e.g. `--rubber-stamp`).
    pub fn spawn_with(config: &Path, extra: &[&str]) -> Result<VerifierAgent> {
        let log = config.with_file_name("verifier.log");
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)?;
        let child = Command::new(verifier_path())
            .args(["run", "--config"])
            .arg(config)
            .args(["--log-format", "json"])
            .args(extra)
            .stdout(Stdio::from(out.try_clone()?))
            .stderr(Stdio::from(out))
            .spawn()
            .context("starting gpuchain-verifier (cargo build --workspace)")?;
        Ok(VerifierAgent {
            child: Some(child),
            config: config.to_path_buf(),
            log,
        })
    }

    /// SIGTERM, then waits for the exit; returns whether it exited successfully.
    pub fn terminate(&mut self) -> Result<bool> {
        let Some(mut c) = self.child.take() else {
            return Ok(false);
        };
        Command::new("kill")
            .arg("-TERM")
            .arg(c.id().to_string())
            .status()?;
        Ok(c.wait()?.success())
    }

    /// kill -9.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
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

    /// `status --output json`.
    pub fn status(&self) -> Result<serde_json::Value> {
        let out = verifier_cli(&[
            "status",
            "--config",
            &self.config.to_string_lossy(),
            "--output",
            "json",
        ])?;
        anyhow::ensure!(
            out.status.success(),
            "status failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    /// The log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for VerifierAgent {
    fn drop(&mut self) {
        self.kill();
    }
}
