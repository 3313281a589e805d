//! Driving `gpuchain-provider` agents from end-to-end tests: the binary beside `gpuchaind`,
//! a config file per agent, registration and a running [`ProviderAgent`], and a tiny HTTP
//! blob host for the client's inputs (it can serve wrong bytes on purpose).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Result;

use crate::agent::{Agent, AgentBinary};

/// The `gpuchain-provider` binary an agent runs.
pub struct ProviderBinary;

impl AgentBinary for ProviderBinary {
    const ROLE: &'static str = "provider";
}

/// A running `gpuchain-provider` agent; killed on drop.
pub type ProviderAgent = Agent<ProviderBinary>;

impl ProviderAgent {
    /// Starts `gpuchain-provider run --config <config> --log-format json <extra>`.
    pub fn spawn(config: &Path, extra: &[&str]) -> Result<ProviderAgent> {
        Agent::start(config, extra)
    }
}

/// Settings of one agent's config file.
pub struct AgentSpec {
    /// Node RPC URL.
    pub node: String,
    /// gpuchaind home with `keys/`.
    pub keys_home: PathBuf,
    /// Key name.
    pub key: String,
    /// Directory for its config, state, blobs and log.
    pub dir: PathBuf,
    /// Blob server port (127.0.0.1).
    pub blob_port: u16,
    /// Metrics port (127.0.0.1).
    pub metrics_port: u16,
    /// ugpu per CPU-second.
    pub cpu_price: u128,
    /// Concurrent jobs.
    pub max_jobs: u32,
    /// Architectures it runs (snake_case names).
    pub archs: Vec<String>,
    /// Bond at registration.
    pub bond: u128,
}

impl AgentSpec {
    /// A CPU provider of digits jobs on `net`'s first node under key `key`, its files in
    /// `<parent>/<key>`, on two free ports, at 100,000 ugpu per CPU-second, two jobs at
    /// once, bonding 1,000 GPU: what most tests want, changed field by field where not.
    pub fn digits(net: &crate::TestNet, key: &str, parent: &Path) -> AgentSpec {
        let ports = crate::free_port_block(2);
        AgentSpec {
            node: net.net.nodes[0].rpc_url.clone(),
            keys_home: net.keys_home(),
            key: key.into(),
            dir: parent.join(key),
            blob_port: ports,
            metrics_port: ports + 1,
            cpu_price: 100_000,
            max_jobs: 2,
            archs: vec!["digits_mlp".into()],
            bond: 1_000_000_000,
        }
    }

    /// Writes `<dir>/provider.toml` and returns its path.
    pub fn write_config(&self) -> Result<PathBuf> {
        let archs: Vec<String> = self.archs.iter().map(|a| format!("{a:?}")).collect();
        let sections = format!(
            r#"[provider]
data_dir = "{data}"
endpoint_url = "http://127.0.0.1:{blob}"
listen = "127.0.0.1:{blob}"
metrics_listen = "127.0.0.1:{metrics}"
region = "local"
bond = {bond}
backend = "auto"
allow_private_blob_hosts = true

[capacity]
max_concurrent_jobs = {jobs}
archs = [{archs}]

[pricing]
per_gpu_second = {{ cpu = {price}, default = {price} }}
min_margin_ppm = 100000
"#,
            data = self.dir.join("data").display(),
            blob = self.blob_port,
            metrics = self.metrics_port,
            bond = self.bond,
            jobs = self.max_jobs,
            archs = archs.join(", "),
            price = self.cpu_price,
        );
        ProviderAgent::write_config(&self.dir, &self.node, &self.keys_home, &self.key, &sections)
    }

    /// Writes the config, registers the provider on chain and starts its agent with `extra`
    /// arguments; the agent's `config` restarts it.
    pub fn start(&self, extra: &[&str]) -> Result<ProviderAgent> {
        let config = self.write_config()?;
        ProviderAgent::register(&config)?;
        ProviderAgent::spawn(&config, extra)
    }
}

/// A tiny HTTP server for `GET /blob/<name>` on 127.0.0.1.
pub struct BlobHost {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    blobs: Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
    requests: Arc<std::sync::atomic::AtomicUsize>,
}

impl BlobHost {
    /// Starts serving on a free port (a thread per connection; lives as long as the test).
    pub fn start() -> Result<BlobHost> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}", listener.local_addr()?);
        let blobs: Arc<Mutex<BTreeMap<String, Vec<u8>>>> = Arc::default();
        let served = Arc::clone(&blobs);
        let requests: Arc<std::sync::atomic::AtomicUsize> = Arc::default();
        let counted = Arc::clone(&requests);
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let served = Arc::clone(&served);
                std::thread::spawn(move || {
                    let mut conn = conn;
                    let mut buf = [0u8; 2048];
                    let n = conn.read(&mut buf).unwrap_or(0);
                    let req = String::from_utf8_lossy(&buf[..n]).to_string();
                    let name = req
                        .split_whitespace()
                        .nth(1)
                        .and_then(|p| p.strip_prefix("/blob/"))
                        .unwrap_or("")
                        .to_string();
                    let body = served.lock().ok().and_then(|m| m.get(&name).cloned());
                    let (status, body) = match body {
                        Some(b) => ("200 OK", b),
                        None => ("404 Not Found", Vec::new()),
                    };
                    let head = format!(
                        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = conn.write_all(head.as_bytes());
                    let _ = conn.write_all(&body);
                });
            }
        });
        Ok(BlobHost {
            url,
            blobs,
            requests,
        })
    }

    /// Connections accepted so far.
    pub fn requests(&self) -> usize {
        self.requests.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Serves `bytes` at `/blob/<name>` and returns the URL.
    pub fn put(&self, name: &str, bytes: Vec<u8>) -> String {
        if let Ok(mut m) = self.blobs.lock() {
            m.insert(name.to_string(), bytes);
        }
        format!("{}/blob/{name}", self.url)
    }
}
