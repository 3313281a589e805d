//! `gpuchain-provider init`: writes a configuration file, optionally creating the key.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use gpuchain_jobspec::ModelArch;

use crate::config::{CapacityConfig, Config, PricingConfig, ProviderConfig};

/// Arguments of `init`.
#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// The file, the chain, the key and the data directory.
    #[command(flatten)]
    file: gpuchain_agent_kit::args::InitFileArgs<Config>,
    /// Blob server listen address.
    #[arg(long, default_value = "127.0.0.1:7070")]
    listen: SocketAddr,
    /// Public URL of the blob server, registered on chain (default: http://<listen>).
    #[arg(long)]
    endpoint_url: Option<String>,
    /// Prometheus /metrics listen address.
    #[arg(long, default_value = "127.0.0.1:9464")]
    metrics_listen: SocketAddr,
    /// Region label.
    #[arg(long, default_value = "local")]
    region: String,
    /// Bond for `register`, ugpu.
    #[arg(long, default_value_t = 1_000_000_000)]
    bond: u64,
    /// Concurrent jobs (running leases plus pending bids).
    #[arg(long, default_value_t = 2)]
    max_jobs: u32,
    /// Price per CPU-second for CPU machines, ugpu.
    #[arg(long, default_value_t = 1_000)]
    cpu_price: u64,
    /// Price per GPU-second for any GPU without its own entry, ugpu.
    #[arg(long, default_value_t = 50_000)]
    gpu_price: u64,
    /// Minimum margin over cost, ppm.
    #[arg(long, default_value_t = 100_000)]
    margin_ppm: u32,
    /// Pricing script (order JSON on stdin, price on stdout).
    #[arg(long)]
    pricing_script: Option<PathBuf>,
    /// Backend: auto, cpu, canonical, cuda[:N].
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Overwrite an existing file.
    #[arg(long)]
    force: bool,
}

pub(super) fn run(a: InitArgs) -> Result<()> {
    let (address, chain, key) = a.file.sections()?;
    let mut rates = BTreeMap::new();
    rates.insert("cpu".to_string(), a.cpu_price);
    rates.insert("default".to_string(), a.gpu_price);
    let config = Config {
        chain,
        key,
        provider: ProviderConfig {
            data_dir: a.file.data_dir.clone(),
            endpoint_url: a
                .endpoint_url
                .unwrap_or_else(|| format!("http://{}", a.listen)),
            listen: a.listen,
            metrics_listen: a.metrics_listen,
            region: a.region,
            bond: a.bond,
            backend: a.backend,
            prefetch_before_bid: true,
            min_driver_major: 525,
            min_cuda_version: 12000,
            allow_private_blob_hosts: false,
            appeal_faulty_verdicts: true,
        },
        capacity: CapacityConfig {
            max_concurrent_jobs: a.max_jobs,
            archs: vec![
                ModelArch::DigitsMlp,
                ModelArch::DigitsCnn,
                ModelArch::MiniLmEmbedder,
                ModelArch::LlamaDecoder,
                ModelArch::LlamaGguf,
                ModelArch::MiniLmClassifier,
            ],
            max_job_memory_mib: 0,
            min_exec_deadline_blocks: 5,
            max_blob_bytes: 4 << 30,
            blob_bytes_per_ugpu: 4096,
        },
        serving: None,
        pricing: PricingConfig {
            per_gpu_second: rates,
            min_margin_ppm: a.margin_ppm,
            min_price: 1,
            script: a.pricing_script,
        },
    };
    a.file.write(&config, &address, a.force)
}
