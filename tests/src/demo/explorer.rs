//! The explorer beside the demo: `gpuchain-explorer` started on a free port as soon as the
//! localnet runs, so every auction, lease, verdict and slash the demo prints can be watched in
//! a browser as it happens.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::gpuchaind_path;

/// `gpuchain-explorer` beside `gpuchaind` (or `GPUCHAIN_EXPLORER_BIN`).
pub fn explorer_path() -> PathBuf {
    match std::env::var_os("GPUCHAIN_EXPLORER_BIN") {
        Some(p) => PathBuf::from(p),
        None => gpuchaind_path().with_file_name("gpuchain-explorer"),
    }
}

/// A running explorer, stopped on drop.
pub struct ExplorerProcess {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// Its log file.
    pub log: PathBuf,
}

impl ExplorerProcess {
    /// Starts the explorer on `port` following `node`, logging under `dir`, and waits until it
    /// answers.
    pub async fn start(node: &str, port: u16, dir: &Path) -> Result<ExplorerProcess> {
        std::fs::create_dir_all(dir)?;
        let log = dir.join("explorer.log");
        let file = std::fs::File::create(&log)?;
        let child = Command::new(explorer_path())
            .args(["--node", node, "--listen", &format!("127.0.0.1:{port}")])
            .stdout(file.try_clone()?)
            .stderr(file)
            .stdin(Stdio::null())
            .spawn()
            .with_context(|| {
                format!(
                    "starting {} (cargo build --workspace)",
                    explorer_path().display()
                )
            })?;
        let process = ExplorerProcess {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
        };
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let answered = http
                .get(format!("{}/status", process.url))
                .header("accept", "application/json")
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if answered {
                return Ok(process);
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the explorer did not answer in 60 s; its log: {}",
                std::fs::read_to_string(&process.log).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl ExplorerProcess {
    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ExplorerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
