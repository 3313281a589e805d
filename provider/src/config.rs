//! The agent's configuration file (TOML): chain endpoint, key, serving endpoint, capacity,
//! pricing. `gpuchain-provider init` writes one with defaults; see docs/provider.md.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Result;
use gpuchain_agent_kit::config::read_toml;
pub(crate) use gpuchain_agent_kit::config::{AgentConfig, ChainConfig, KeyConfig};
use gpuchain_jobspec::ModelArch;
use serde::{Deserialize, Serialize};

/// The whole file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Config {
    /// Chain connection.
    pub(crate) chain: ChainConfig,
    /// Signing key.
    pub(crate) key: KeyConfig,
    /// Serving and local state.
    pub(crate) provider: ProviderConfig,
    /// What the agent takes on.
    pub(crate) capacity: CapacityConfig,
    /// How it prices bids.
    pub(crate) pricing: PricingConfig,
    /// Serving leases (absent: the agent takes none).
    #[serde(default)]
    pub(crate) serving: Option<ServingConfig>,
}

/// `[serving]`: the models this provider's `serve-model` endpoint offers on chain leases,
/// and where that endpoint keeps receipts and acknowledged batches.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServingConfig {
    /// `serve-model --receipts DIR`.
    pub(crate) receipts: PathBuf,
    /// The `serve-model` endpoint's base URL as clients reach it: each bid names it (the
    /// lease keeps it, and the client's gateway sends requests there), and a report is
    /// answered with a heartbeat only while it answers `GET /v1/models`.
    pub(crate) endpoint: String,
    /// What it bids on.
    #[serde(default)]
    pub(crate) models: Vec<ServedModel>,
}

/// One model offered on leases.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServedModel {
    /// Its name in the API (an order names it).
    pub(crate) name: String,
    /// Hex blake3 of its weights file (an order names it).
    pub(crate) blake3: String,
    /// Price bid, ugpu per million tokens (generation) or thousand inputs (embeddings).
    pub(crate) price: u64,
}

/// `[provider]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProviderConfig {
    /// Local state (`state.json`) and the blob store (`blobs/`).
    pub(crate) data_dir: PathBuf,
    /// Public URL of the blob server, registered on chain.
    pub(crate) endpoint_url: String,
    /// Where the blob server listens.
    pub(crate) listen: SocketAddr,
    /// Prometheus `/metrics` listen address (keep it on 127.0.0.1).
    pub(crate) metrics_listen: SocketAddr,
    /// Region label registered on chain.
    pub(crate) region: String,
    /// Bond for `register`, ugpu (TOML integers are 64-bit).
    pub(crate) bond: u64,
    /// Backend: auto, cpu, canonical, cuda[:N].
    #[serde(default = "default_backend")]
    pub(crate) backend: String,
    /// Fetch and verify an order's blobs before bidding (skips orders with bad blobs).
    #[serde(default = "yes")]
    pub(crate) prefetch_before_bid: bool,
    /// Least NVIDIA driver major version for GPU jobs.
    #[serde(default = "default_min_driver")]
    pub(crate) min_driver_major: u32,
    /// Least CUDA version for GPU jobs, NVML-style (12040 = 12.4).
    #[serde(default = "default_min_cuda")]
    pub(crate) min_cuda_version: u32,
    /// Fetch blobs from loopback, private and link-local addresses too. Off by default:
    /// blob URLs come from whoever posts an order. Localnets turn it on.
    #[serde(default)]
    pub(crate) allow_private_blob_hosts: bool,
    /// Appeal every `faulty` first verdict on a result this agent computed, and every
    /// standing `faulty` verdict on a serving claim of its endpoint (locks the chain's
    /// appeal deposit, returned when the fresh jury overturns the verdict).
    #[serde(default = "yes")]
    pub(crate) appeal_faulty_verdicts: bool,
}

/// `[capacity]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CapacityConfig {
    /// Jobs held at once: running leases plus bids waiting for their auction.
    pub(crate) max_concurrent_jobs: u32,
    /// Architectures this agent runs.
    pub(crate) archs: Vec<ModelArch>,
    /// Largest job memory estimate taken on, MiB (0: what the device has).
    #[serde(default)]
    pub(crate) max_job_memory_mib: u64,
    /// Blocks kept in hand before a lease's commit deadline: an order whose execution
    /// window is shorter is skipped.
    #[serde(default = "default_min_exec_blocks")]
    pub(crate) min_exec_deadline_blocks: u64,
    /// Largest total size of one order's blobs this agent fetches, bytes.
    #[serde(default = "default_max_blob_bytes")]
    pub(crate) max_blob_bytes: u64,
    /// Blob bytes fetched per ugpu the order pays per replica: an order offering little
    /// cannot make the agent download much.
    #[serde(default = "default_blob_bytes_per_ugpu")]
    pub(crate) blob_bytes_per_ugpu: u64,
}

/// `[pricing]`: price = ceil(rate × units × estimated seconds × (1 + margin)), units = GPU
/// count (1 on CPU). A script, when set, gets the order as JSON on stdin and prints a price
/// (or nothing to pass); it never goes below the strategy's floor.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PricingConfig {
    /// ugpu per GPU-second by class: a GPU model name as NVML reports it, `cpu`, or
    /// `default`.
    pub(crate) per_gpu_second: BTreeMap<String, u64>,
    /// Least margin over cost, ppm.
    #[serde(default)]
    pub(crate) min_margin_ppm: u32,
    /// Lowest bid, ugpu.
    #[serde(default = "one")]
    pub(crate) min_price: u64,
    /// Akash-style pricing script.
    #[serde(default)]
    pub(crate) script: Option<PathBuf>,
}

fn default_backend() -> String {
    "auto".into()
}
fn yes() -> bool {
    true
}
fn one() -> u64 {
    1
}
fn default_min_driver() -> u32 {
    525
}
fn default_min_cuda() -> u32 {
    12000
}
fn default_min_exec_blocks() -> u64 {
    5
}
fn default_max_blob_bytes() -> u64 {
    4 << 30
}
fn default_blob_bytes_per_ugpu() -> u64 {
    4096
}

impl Config {
    /// Reads and checks a config file.
    pub(crate) fn load(path: &Path) -> Result<Config> {
        let config: Config = read_toml(path)?;
        anyhow::ensure!(
            config.capacity.max_concurrent_jobs > 0,
            "capacity.max_concurrent_jobs must be at least 1"
        );
        anyhow::ensure!(
            !config.pricing.per_gpu_second.is_empty(),
            "pricing.per_gpu_second needs at least one class (e.g. cpu = 1000)"
        );
        if let Some(serving) = &config.serving {
            anyhow::ensure!(
                gpuchain_serving::is_endpoint_url(serving.endpoint.trim_end_matches('/')),
                "serving.endpoint `{}` must be an http:// or https:// URL (at most {} bytes, \
                 no spaces) where clients reach serve-model",
                serving.endpoint,
                gpuchain_serving::MAX_ENDPOINT_BYTES
            );
        }
        Ok(config)
    }
}

impl AgentConfig for Config {
    fn data_dir(&self) -> &Path {
        &self.provider.data_dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const SAMPLE: &str = r#"
[chain]
node = "http://127.0.0.1:26657"

[key]
home = "/tmp/h"
name = "p1"

[provider]
data_dir = "/tmp/p1"
endpoint_url = "http://127.0.0.1:7070"
listen = "127.0.0.1:7070"
metrics_listen = "127.0.0.1:9464"
region = "local"
bond = 1000000000

[capacity]
max_concurrent_jobs = 2
archs = ["digits_mlp", "digits_cnn"]

[pricing]
per_gpu_second = { cpu = 1000, default = 50000 }
min_margin_ppm = 100000
"#;

    #[test]
    fn a_sample_config_parses_with_defaults_and_round_trips() {
        let c: Config = toml::from_str(SAMPLE).unwrap();
        assert_eq!(c.provider.backend, "auto");
        assert!(c.provider.prefetch_before_bid);
        assert_eq!(
            c.capacity.archs,
            [ModelArch::DigitsMlp, ModelArch::DigitsCnn]
        );
        assert_eq!(c.chain.websocket_url(), "ws://127.0.0.1:26657/websocket");
        let again: Config = toml::from_str(&toml::to_string_pretty(&c).unwrap()).unwrap();
        assert_eq!(again.pricing.per_gpu_second, c.pricing.per_gpu_second);
    }

    #[test]
    fn a_serving_section_must_say_where_its_endpoint_answers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("provider.toml");
        let serving = "\n[serving]\nreceipts = \"/tmp/r\"\n";
        std::fs::write(&path, format!("{SAMPLE}{serving}")).unwrap();
        assert!(Config::load(&path).is_err(), "no endpoint");
        std::fs::write(
            &path,
            format!("{SAMPLE}{serving}endpoint = \"127.0.0.1:8081\"\n"),
        )
        .unwrap();
        let err = Config::load(&path).unwrap_err().to_string();
        assert!(err.contains("serving.endpoint"), "{err}");
        std::fs::write(
            &path,
            format!("{SAMPLE}{serving}endpoint = \"http://10.0.0.2:8081/\"\n"),
        )
        .unwrap();
        let c = Config::load(&path).unwrap();
        assert_eq!(c.serving.unwrap().endpoint, "http://10.0.0.2:8081/");
    }

    #[test]
    fn unknown_fields_are_refused() {
        let bad = SAMPLE.replace("region = \"local\"", "region = \"local\"\ncolour = 1");
        assert!(toml::from_str::<Config>(&bad).is_err());
    }
}
