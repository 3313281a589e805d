//! The agent's configuration file (TOML): chain endpoint, key, serving endpoint, capacity,
//! pricing. `gpuchain-provider init` writes one with defaults; see docs/provider.md.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Result;
use gpuchain_agent_kit::config::{const_bool, const_u32, const_u64, default_backend};
pub(crate) use gpuchain_agent_kit::config::{AgentConfig, ChainConfig, KeyConfig};
use gpuchain_jobspec::ModelArch;

gpuchain_agent_kit::config_section! {
    /// The whole file.
    pub(crate) struct Config {
        /// Chain connection.
        chain: ChainConfig,
        /// Signing key.
        key: KeyConfig,
        /// Serving and local state.
        provider: ProviderConfig,
        /// What the agent takes on.
        capacity: CapacityConfig,
        /// How it prices bids.
        pricing: PricingConfig,
        /// Serving leases (absent: the agent takes none).
        #[serde(default)]
        serving: Option<ServingConfig>,
    }
}

gpuchain_agent_kit::config_section! {
    /// `[serving]`: the models this provider's `serve-model` endpoint offers on chain leases,
    /// and where that endpoint keeps receipts and acknowledged batches.
    pub(crate) struct ServingConfig {
        /// `serve-model --receipts DIR`.
        receipts: PathBuf,
        /// The `serve-model` endpoint's base URL as clients reach it: each bid names it (the
        /// lease keeps it, and the client's gateway sends requests there), and a report is
        /// answered with a heartbeat only while it answers `GET /v1/models`.
        endpoint: String,
        /// What it bids on.
        #[serde(default)]
        models: Vec<ServedModel>,
    }
}

gpuchain_agent_kit::config_section! {
    /// One model offered on leases.
    pub(crate) struct ServedModel {
        /// Its name in the API (an order names it).
        name: String,
        /// Hex blake3 of its weights file (an order names it).
        blake3: String,
        /// Price bid, ugpu per million tokens (generation) or thousand inputs (embeddings).
        price: u64,
    }
}

gpuchain_agent_kit::config_section! {
    /// `[provider]`.
    pub(crate) struct ProviderConfig {
        /// Local state (`state.json`) and the blob store (`blobs/`).
        data_dir: PathBuf,
        /// Public URL of the blob server, registered on chain.
        endpoint_url: String,
        /// Where the blob server listens.
        listen: SocketAddr,
        /// Prometheus `/metrics` listen address (keep it on 127.0.0.1).
        metrics_listen: SocketAddr,
        /// Region label registered on chain.
        region: String,
        /// Bond for `register`, ugpu (TOML integers are 64-bit).
        bond: u64,
        /// Backend: auto, cpu, canonical, cuda[:N].
        #[serde(default = "default_backend")]
        backend: String,
        /// Fetch and verify an order's blobs before bidding (skips orders with bad blobs).
        #[serde(default = "const_bool::<true>")]
        prefetch_before_bid: bool,
        /// Least NVIDIA driver major version for GPU jobs.
        #[serde(default = "const_u32::<525>")]
        min_driver_major: u32,
        /// Least CUDA version for GPU jobs, NVML-style (12040 = 12.4).
        #[serde(default = "const_u32::<12000>")]
        min_cuda_version: u32,
        /// Fetch blobs from loopback, private and link-local addresses too. Off by default:
        /// blob URLs come from whoever posts an order. Localnets turn it on.
        #[serde(default)]
        allow_private_blob_hosts: bool,
        /// Appeal every `faulty` first verdict on a result this agent computed, and every
        /// standing `faulty` verdict on a serving claim of its endpoint (locks the chain's
        /// appeal deposit, returned when the fresh jury overturns the verdict).
        #[serde(default = "const_bool::<true>")]
        appeal_faulty_verdicts: bool,
    }
}

gpuchain_agent_kit::config_section! {
    /// `[capacity]`.
    pub(crate) struct CapacityConfig {
        /// Jobs held at once: running leases plus bids waiting for their auction.
        max_concurrent_jobs: u32,
        /// Architectures this agent runs.
        archs: Vec<ModelArch>,
        /// Largest job memory estimate taken on, MiB (0: what the device has).
        #[serde(default)]
        max_job_memory_mib: u64,
        /// Blocks kept in hand before a lease's commit deadline: an order whose execution
        /// window is shorter is skipped.
        #[serde(default = "const_u64::<5>")]
        min_exec_deadline_blocks: u64,
        /// Largest total size of one order's blobs this agent fetches, bytes.
        #[serde(default = "const_u64::<{ 4 << 30 }>")]
        max_blob_bytes: u64,
        /// Blob bytes fetched per ugpu the order pays per replica: an order offering little
        /// cannot make the agent download much.
        #[serde(default = "const_u64::<4096>")]
        blob_bytes_per_ugpu: u64,
    }
}

gpuchain_agent_kit::config_section! {
    /// `[pricing]`: price = ceil(rate × units × estimated seconds × (1 + margin)), units = GPU
    /// count (1 on CPU). A script, when set, gets the order as JSON on stdin and prints a price
    /// (or nothing to pass); it never goes below the strategy's floor.
    pub(crate) struct PricingConfig {
        /// ugpu per GPU-second by class: a GPU model name as NVML reports it, `cpu`, or
        /// `default`.
        per_gpu_second: BTreeMap<String, u64>,
        /// Least margin over cost, ppm.
        #[serde(default)]
        min_margin_ppm: u32,
        /// Lowest bid, ugpu.
        #[serde(default = "const_u64::<1>")]
        min_price: u64,
        /// Akash-style pricing script.
        #[serde(default)]
        script: Option<PathBuf>,
    }
}

impl AgentConfig for Config {
    const ROLE: &'static str = "provider";
    const CONFIG_ENV: &'static str = "GPUCHAIN_PROVIDER_CONFIG";
    const CONFIG_FILE: &'static str = "provider.toml";

    fn check(&self) -> Result<()> {
        anyhow::ensure!(
            self.capacity.max_concurrent_jobs > 0,
            "capacity.max_concurrent_jobs must be at least 1"
        );
        anyhow::ensure!(
            !self.pricing.per_gpu_second.is_empty(),
            "pricing.per_gpu_second needs at least one class (e.g. cpu = 1000)"
        );
        if let Some(serving) = &self.serving {
            anyhow::ensure!(
                gpuchain_serving::is_endpoint_url(serving.endpoint.trim_end_matches('/')),
                "serving.endpoint `{}` must be an http:// or https:// URL (at most {} bytes, \
                 no spaces) where clients reach serve-model",
                serving.endpoint,
                gpuchain_serving::MAX_ENDPOINT_BYTES
            );
        }
        Ok(())
    }

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
