use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use gpuchain_client::ChainClient;
use gpuchain_node::localnet::{Localnet, LocalnetSpec, PORTS_PER_NODE};
use tempfile::TempDir;

use crate::free_port_block;

/// The `gpuchaind` binary built beside the test executable (`cargo build` first).
pub fn gpuchaind_path() -> PathBuf {
    if let Ok(p) = std::env::var("GPUCHAIND_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().unwrap_or_default();
    // A binary in target/<profile>/ has it beside itself; a test in target/<profile>/deps/
    // one level up.
    let beside = exe.with_file_name("gpuchaind");
    if beside.exists() {
        return beside;
    }
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    dir.join("gpuchaind")
}

/// An example binary of the workspace (`cargo build --examples`), beside `gpuchaind`.
pub fn example_path(name: &str) -> PathBuf {
    gpuchaind_path().with_file_name("examples").join(name)
}

fn cometbft_path() -> PathBuf {
    if let Ok(p) = std::env::var("COMETBFT_BIN") {
        return PathBuf::from(p);
    }
    let home = std::env::var("HOME").unwrap_or_default();
    PathBuf::from(home).join(".cache/gpuchain/cometbft-v0.38.26/cometbft")
}

/// `cometbft-gpuchain`, built beside `gpuchaind` by scripts/build-cometbft-gpuchain.sh.
fn cometbft_gpuchain_path() -> PathBuf {
    gpuchaind_path().with_file_name("cometbft-gpuchain")
}

/// Runs the `gpuchaind` CLI and returns its output.
pub fn cli(args: &[&str]) -> Result<Output> {
    let bin = gpuchaind_path();
    Command::new(&bin).args(args).output().with_context(|| {
        format!(
            "running {} (build it with `cargo build --bins`)",
            bin.display()
        )
    })
}

struct NodeProcs {
    app: Option<Child>,
    comet: Option<Child>,
}

/// A running localnet; everything is killed and deleted on drop.
pub struct TestNet {
    dir: TempDir,
    keep: bool,
    /// Layout and keys.
    pub net: Localnet,
    procs: Vec<NodeProcs>,
}

fn kill(child: &mut Option<Child>) {
    if let Some(mut c) = child.take() {
        let _ = c.kill();
        let _ = c.wait();
    }
}

impl TestNet {
    /// Writes and starts `validators` nodes with `accounts` funded, and waits for blocks.
    pub async fn start(validators: usize, accounts: &[(&str, u128)]) -> Result<TestNet> {
        Self::start_with(validators, accounts, |_| {}).await
    }

    /// Like [`TestNet::start`], after `tweak` adjusts the spec (genesis parameters, extra
    /// full nodes).
    pub async fn start_with(
        validators: usize,
        accounts: &[(&str, u128)],
        tweak: impl FnOnce(&mut LocalnetSpec),
    ) -> Result<TestNet> {
        let mut t = Self::build_with(validators, accounts, tweak)?;
        let nodes = t.net.nodes.len();
        t.start_nodes(0..nodes).await?;
        Ok(t)
    }

    /// Writes the localnet without starting anything, so a test may change a node's files
    /// first; [`TestNet::start_nodes`] starts them.
    pub fn build_with(
        validators: usize,
        accounts: &[(&str, u128)],
        tweak: impl FnOnce(&mut LocalnetSpec),
    ) -> Result<TestNet> {
        let dir = tempfile::Builder::new().prefix("gpuchain-e2e-").tempdir()?;
        let mut spec = LocalnetSpec::new(dir.path().join("net"));
        spec.validators = validators;
        spec.chain_id = "gpuchain-e2e".into();
        spec.timeout_commit_ms = 200;
        spec.accounts
            .extend(accounts.iter().map(|(n, a)| (n.to_string(), *a)));
        tweak(&mut spec);
        let nodes = spec.validators + spec.extra_nodes;
        spec.base_port = free_port_block(nodes as u16 * PORTS_PER_NODE);
        let net = Localnet::build(&spec)?;
        std::fs::create_dir_all(dir.path().join("logs"))?;
        let procs = (0..nodes)
            .map(|_| NodeProcs {
                app: None,
                comet: None,
            })
            .collect();
        Ok(TestNet {
            dir,
            keep: false,
            net,
            procs,
        })
    }

    /// Starts the apps and then the CometBFTs of `nodes`, and waits until each has committed
    /// a block.
    pub async fn start_nodes(&mut self, nodes: std::ops::Range<usize>) -> Result<()> {
        for i in nodes.clone() {
            self.start_app(i, &[])?;
        }
        self.start_comets_and_wait(nodes).await
    }

    /// Starts the CometBFTs of `nodes`, whose apps are already listening, and waits until
    /// each has committed a block.
    async fn start_comets_and_wait(&mut self, nodes: std::ops::Range<usize>) -> Result<()> {
        for i in nodes.clone() {
            self.start_comet(i)?;
        }
        self.wait_for_first_blocks(nodes).await
    }

    /// Waits until each of `nodes` has committed a block. Every node, not just the first:
    /// a node still in its handshake answers CheckTx from an empty state.
    pub async fn wait_for_first_blocks(&self, nodes: std::ops::Range<usize>) -> Result<()> {
        for i in nodes {
            self.client(i)?
                .wait_for_height(2, Duration::from_secs(60))
                .await?;
        }
        Ok(())
    }

    fn log(&self, name: &str) -> Result<Stdio> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("logs").join(name))?;
        Ok(Stdio::from(f))
    }

    /// Starts node `i`'s app, with extra environment variables.
    pub fn start_app(&mut self, i: usize, env: &[(&str, &str)]) -> Result<()> {
        self.start_app_from(i, &gpuchaind_path(), env)
    }

    /// Starts node `i`'s app from another build of `gpuchaind` (an upgrade's release).
    pub fn start_app_from(&mut self, i: usize, binary: &Path, env: &[(&str, &str)]) -> Result<()> {
        let home = &self.net.nodes[i].app_home;
        let mut cmd = Command::new(binary);
        cmd.arg("start").arg("--home").arg(home);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd
            .stdout(self.log(&format!("node{i}-app.log"))?)
            .stderr(self.log(&format!("node{i}-app.log"))?)
            .spawn()
            .context("starting gpuchaind (build it with `cargo build --bins`)")?;
        self.procs[i].app = Some(child);
        wait_for_port(&self.net.nodes[i].abci_addr)?;
        Ok(())
    }

    /// Starts node `i`'s CometBFT.
    pub fn start_comet(&mut self, i: usize) -> Result<()> {
        let child = Command::new(cometbft_path())
            .arg("start")
            .arg("--home")
            .arg(&self.net.nodes[i].comet_home)
            .stdout(self.log(&format!("node{i}-cometbft.log"))?)
            .stderr(self.log(&format!("node{i}-cometbft.log"))?)
            .spawn()
            .context("starting cometbft (run scripts/install-cometbft.sh)")?;
        self.procs[i].comet = Some(child);
        Ok(())
    }

    /// Starts the CometBFTs of `nodes` with CometBFT's built-in `kvstore` app in place of
    /// gpuchaind, the rest of their config unchanged (the anchor the engine benchmark holds
    /// gpuchain to), and waits until each has committed a block.
    pub async fn start_builtin_kvstore_nodes(
        &mut self,
        nodes: std::ops::Range<usize>,
    ) -> Result<()> {
        for i in nodes.clone() {
            let path = self.net.nodes[i]
                .comet_home
                .join("config")
                .join("config.toml");
            let text = std::fs::read_to_string(&path)?;
            let line = text
                .lines()
                .find(|l| l.starts_with("proxy_app"))
                .ok_or_else(|| anyhow::anyhow!("{} has no proxy_app", path.display()))?
                .to_string();
            std::fs::write(&path, text.replace(&line, "proxy_app = \"kvstore\""))?;
        }
        self.start_comets_and_wait(nodes).await
    }

    /// Starts `nodes` as `cometbft-gpuchain` (CometBFT with the gpuchain app inside its
    /// process, `start --app-home`), and waits until each has committed a block.
    pub async fn start_in_process_nodes(&mut self, nodes: std::ops::Range<usize>) -> Result<()> {
        for i in nodes.clone() {
            self.start_in_process(i)?;
        }
        self.wait_for_first_blocks(nodes).await
    }

    /// Starts node `i` as `cometbft-gpuchain`, its app inside CometBFT's process.
    pub fn start_in_process(&mut self, i: usize) -> Result<()> {
        let binary = cometbft_gpuchain_path();
        let library = binary.with_file_name("libgpuchain_inprocess.a");
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        anyhow::ensure!(
            modified(&binary) >= modified(&library),
            "{} is older than the app library it links: run scripts/build-cometbft-gpuchain.sh",
            binary.display()
        );
        let node = &self.net.nodes[i];
        let child = Command::new(binary)
            .arg("start")
            .arg("--home")
            .arg(&node.comet_home)
            .arg("--app-home")
            .arg(&node.app_home)
            .stdout(self.log(&format!("node{i}-cometbft.log"))?)
            .stderr(self.log(&format!("node{i}-cometbft.log"))?)
            .spawn()
            .context("starting cometbft-gpuchain (run scripts/build-cometbft-gpuchain.sh)")?;
        self.procs[i].comet = Some(child);
        Ok(())
    }

    /// Starts CometBFT's `kvstore` example app as a separate process (`abci-cli kvstore`,
    /// served over the ABCI socket as gpuchaind is) in place of each of `nodes`' apps, then
    /// their CometBFTs unchanged, and waits until each has committed a block: what the
    /// socket transport costs, apart from what gpuchain's app costs.
    pub async fn start_socket_kvstore_nodes(
        &mut self,
        nodes: std::ops::Range<usize>,
        abci_cli: &Path,
    ) -> Result<()> {
        for i in nodes.clone() {
            let addr = format!("tcp://{}", self.net.nodes[i].abci_addr);
            let child = Command::new(abci_cli)
                .args(["kvstore", "--address", &addr, "--log_level", "error"])
                .stdout(self.log(&format!("node{i}-app.log"))?)
                .stderr(self.log(&format!("node{i}-app.log"))?)
                .spawn()
                .with_context(|| format!("starting {}", abci_cli.display()))?;
            self.procs[i].app = Some(child);
            wait_for_port(&self.net.nodes[i].abci_addr)?;
        }
        self.start_comets_and_wait(nodes).await
    }

    /// The running processes, labelled `app` (gpuchaind) or `cometbft`, with their pids.
    pub fn pids(&self) -> Vec<(String, u32)> {
        let mut pids = Vec::new();
        for p in &self.procs {
            if let Some(app) = &p.app {
                pids.push(("app".to_string(), app.id()));
            }
            if let Some(comet) = &p.comet {
                pids.push(("cometbft".to_string(), comet.id()));
            }
        }
        pids
    }

    /// kill -9 node `i`'s app.
    pub fn kill_app(&mut self, i: usize) {
        kill(&mut self.procs[i].app);
    }

    /// kill -9 node `i`'s CometBFT.
    pub fn kill_comet(&mut self, i: usize) {
        kill(&mut self.procs[i].comet);
    }

    /// Whether node `i`'s app process has exited (it is then forgotten, as if killed).
    pub fn app_exited(&mut self, i: usize) -> Result<bool> {
        let running = match self.procs[i].app.as_mut() {
            Some(child) => child.try_wait()?.is_none(),
            None => false,
        };
        if !running {
            self.procs[i].app = None;
        }
        Ok(!running)
    }

    /// Waits until node `i`'s app process exits on its own; returns whether it did in time.
    pub fn wait_app_exit(&mut self, i: usize, timeout: Duration) -> Result<bool> {
        let deadline = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < deadline {
            if let Some(child) = self.procs[i].app.as_mut() {
                if child.try_wait()?.is_some() {
                    self.procs[i].app = None;
                    return Ok(true);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(false)
    }

    /// RPC client of node `i`.
    pub fn client(&self, i: usize) -> Result<ChainClient> {
        ChainClient::new(&self.net.nodes[i].rpc_url)
    }

    /// What the named accounts hold together, on node 0: one party's stake in a scenario
    /// where it owns several accounts.
    pub async fn total_balance(&self, names: &[&str]) -> Result<u128> {
        let chain = self.client(0)?;
        let mut total = 0u128;
        for name in names {
            total += chain.balance(&self.net.account(name)?).await?;
        }
        Ok(total)
    }

    /// One scrape of node `i`'s Prometheus metrics: the exposition text.
    pub fn scrape_metrics(&self, i: usize) -> Result<String> {
        use std::io::{Read, Write};
        let mut sock = std::net::TcpStream::connect(&self.net.nodes[i].metrics_addr)?;
        sock.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")?;
        let mut text = String::new();
        sock.read_to_string(&mut text)?;
        let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string());
        body.ok_or_else(|| anyhow::anyhow!("no HTTP body in {text:?}"))
    }

    /// The value of the metric line starting with `name` (labels included) in `text`.
    pub fn metric_value(text: &str, name: &str) -> Option<u64> {
        metric_text(text, name)?.parse().ok()
    }

    /// [`TestNet::metric_value`] for a metric with a fractional value (seconds).
    pub fn metric_f64(text: &str, name: &str) -> Option<f64> {
        metric_text(text, name)?.parse().ok()
    }

    /// gpuchaind home holding the localnet's keystore (`<home>/keys`).
    pub fn keys_home(&self) -> PathBuf {
        self.net
            .keys_dir
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }

    /// The app hash in block `height + 1`'s header as node `i` reports it.
    pub async fn app_hash_after(&self, i: usize, height: u64) -> Result<String> {
        use tendermint_rpc::Client;
        let client = self.client(i)?;
        client
            .wait_for_height(height + 1, Duration::from_secs(90))
            .await?;
        let block = client
            .rpc()
            .block(tendermint::block::Height::try_from(height + 1)?)
            .await?;
        Ok(block.block.header.app_hash.to_string())
    }

    /// Asserts that nodes `nodes` agree on the app hash after `height`.
    pub async fn assert_same_app_hash(&self, nodes: &[usize], height: u64) -> Result<String> {
        let mut hashes = Vec::new();
        for &i in nodes {
            hashes.push(self.app_hash_after(i, height).await?);
        }
        if hashes.windows(2).any(|w| w[0] != w[1]) {
            bail!("app hashes differ after height {height}: {hashes:?}");
        }
        Ok(hashes.remove(0))
    }

    /// CometBFT address (upper-case hex) of node `i`'s consensus key.
    pub fn consensus_address(&self, i: usize) -> Result<String> {
        let path = self.net.nodes[i]
            .comet_home
            .join("config/priv_validator_key.json");
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path)?)?;
        Ok(v["address"].as_str().unwrap_or_default().to_string())
    }

    /// The CometBFT addresses (upper-case hex) of the validator set at node 0's latest height.
    pub async fn validator_addresses(&self) -> Result<Vec<String>> {
        use tendermint_rpc::{Client, Paging};
        let client = self.client(0)?;
        let h = client.latest_height().await?;
        let set = client
            .rpc()
            .validators(tendermint::block::Height::try_from(h)?, Paging::All)
            .await?;
        Ok(set
            .validators
            .iter()
            .map(|v| v.address.to_string())
            .collect())
    }

    /// Whether `consensus_address` signs one of the next few commits. A commit holds only
    /// the first +2/3 of signatures, so one commit is not enough to tell.
    pub async fn signs_a_commit(&self, consensus_address: &str) -> Result<bool> {
        use tendermint_rpc::Client;
        let client = self.client(0)?;
        for _ in 0..40 {
            let h = client.latest_height().await?;
            let commit = client
                .rpc()
                .commit(tendermint::block::Height::try_from(h)?)
                .await?;
            let signed = commit.signed_header.commit.signatures.iter().any(|s| {
                s.validator_address().map(|a| a.to_string()).as_deref() == Some(consensus_address)
            });
            if signed {
                return Ok(true);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        Ok(false)
    }

    /// The localnet's directory (node homes, keys, logs).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Keeps the directory and its logs after the net is dropped.
    pub fn keep_dir(&mut self) {
        self.keep = true;
    }

    /// Path of the logs, for failure messages.
    pub fn logs_dir(&self) -> PathBuf {
        self.dir.path().join("logs")
    }
}

/// The value on the metric line starting with `name` (labels included) in `text`.
fn metric_text<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
}

fn wait_for_port(addr: &str) -> Result<()> {
    for _ in 0..200 {
        if std::net::TcpStream::connect(addr).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    bail!("nothing listening on {addr}")
}

impl Drop for TestNet {
    fn drop(&mut self) {
        for p in &mut self.procs {
            kill(&mut p.comet);
            kill(&mut p.app);
        }
        if self.keep {
            let _ = std::mem::replace(&mut self.dir, tempfile::tempdir().expect("tempdir")).keep();
        } else if std::thread::panicking() {
            // Keep the logs of a failed test for inspection.
            let kept = self.dir.path().to_path_buf();
            eprintln!("test failed; logs kept in {}", kept.join("logs").display());
            let _ = std::mem::replace(&mut self.dir, tempfile::tempdir().expect("tempdir")).keep();
        }
    }
}
