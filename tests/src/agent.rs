//! What the provider and verifier agents share in end-to-end tests: a binary beside
//! `gpuchaind`, a process started from a config file with its JSON log appended to a file
//! beside it, SIGKILL / SIGTERM, and `status --output json`.

use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use anyhow::{Context, Result};

use crate::gpuchaind_path;

/// Which agent binary an [`Agent`] runs: `gpuchain-<ROLE>`, at the path
/// `GPUCHAIN_<ROLE>_BIN` names if set, logging to `<ROLE>.log` beside its config and saying
/// `<ROLE> agent starting` once it runs.
pub trait AgentBinary {
    /// `provider` or `verifier`.
    const ROLE: &'static str;
}

/// A running agent process; killed on drop.
pub struct Agent<B> {
    child: Option<Child>,
    /// Its config file.
    pub config: PathBuf,
    /// Its log file (JSON lines, appended across restarts).
    pub log: PathBuf,
    binary: PhantomData<B>,
}

impl<B: AgentBinary> Agent<B> {
    /// The binary beside `gpuchaind` (or at the path `GPUCHAIN_<ROLE>_BIN` names).
    pub fn path() -> PathBuf {
        match std::env::var(format!("GPUCHAIN_{}_BIN", B::ROLE.to_uppercase())) {
            Ok(p) => PathBuf::from(p),
            Err(_) => gpuchaind_path().with_file_name(format!("gpuchain-{}", B::ROLE)),
        }
    }

    /// Runs the binary with `args` and returns its output.
    pub fn cli(args: &[&str]) -> Result<Output> {
        Command::new(Self::path())
            .args(args)
            .output()
            .with_context(|| {
                format!(
                    "running {} (cargo build --workspace)",
                    Self::path().display()
                )
            })
    }

    /// `<binary> register --config CONFIG`: registers and bonds the agent on chain; an error
    /// carries the CLI's output.
    pub fn register(config: &Path) -> Result<()> {
        let out = Self::cli(&["register", "--config", &config.to_string_lossy()])?;
        anyhow::ensure!(
            out.status.success(),
            "registering the {} of {}: {}{}",
            B::ROLE,
            config.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    }

    /// Writes `<dir>/<ROLE>.toml`, an agent's config: `[chain]` with its `node`, `[key]` with
    /// the keystore under `keys_home` and its `key`, then its own `sections`; returns its path.
    pub(crate) fn write_config(
        dir: &Path,
        node: &str,
        keys_home: &Path,
        key: &str,
        sections: &str,
    ) -> Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let text = format!(
            "[chain]\nnode = \"{node}\"\n\n[key]\nhome = \"{}\"\nname = \"{key}\"\n\n{sections}",
            keys_home.display()
        );
        let path = dir.join(format!("{}.toml", B::ROLE));
        std::fs::write(&path, text)?;
        Ok(path)
    }

    /// Starts `<binary> run --config <config> --log-format json <extra>`.
    pub(crate) fn start(config: &Path, extra: &[&str]) -> Result<Agent<B>> {
        let log = config.with_file_name(format!("{}.log", B::ROLE));
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)?;
        let child = Command::new(Self::path())
            .args(["run", "--config"])
            .arg(config)
            .args(["--log-format", "json"])
            .args(extra)
            .stdout(Stdio::from(out.try_clone()?))
            .stderr(Stdio::from(out))
            .spawn()
            .with_context(|| format!("starting gpuchain-{} (cargo build --workspace)", B::ROLE))?;
        Ok(Agent {
            child: Some(child),
            config: config.to_path_buf(),
            log,
            binary: PhantomData,
        })
    }

    /// `status --output json`.
    pub fn status(&self) -> Result<serde_json::Value> {
        let out = Self::cli(&[
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

    /// Whether its log says it started.
    pub fn started(&self) -> bool {
        self.log_text()
            .contains(&format!("{} agent starting", B::ROLE))
    }
}

impl<B> Agent<B> {
    /// kill -9.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
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

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl<B> Drop for Agent<B> {
    fn drop(&mut self) {
        self.kill();
    }
}
