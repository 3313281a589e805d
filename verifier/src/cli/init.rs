//! `gpuchain-verifier init`: writes a configuration file, optionally creating the key.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::config::{ChallengeConfig, Config, PoolJob, VerifierConfig};

/// Arguments of `init`.
#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// The file, the chain, the key and the data directory.
    #[command(flatten)]
    file: gpuchain_agent_kit::args::InitFileArgs<Config>,
    /// Prometheus /metrics listen address.
    #[arg(long, default_value = "127.0.0.1:9465")]
    metrics_listen: SocketAddr,
    /// Bond for `register`, ugpu.
    #[arg(long, default_value_t = 1_000_000_000)]
    bond: u64,
    /// First-round backend: auto, cpu, canonical, cuda[:N] (appeals always run canonical).
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Plant ringer challenges, posted from these ordinary accounts (key names, repeatable).
    #[arg(long = "poster")]
    posters: Vec<String>,
    /// Ringer job pool: inference job spec JSON files (repeatable).
    #[arg(long = "ringer-job")]
    ringer_jobs: Vec<PathBuf>,
    /// Highest price per replica of a ringer order, ugpu.
    #[arg(long, default_value_t = 1_000_000)]
    ringer_max_price: u64,
    /// Ringer rate, ppm of orders seen (0: the chain's `challenge_rate_ppm`).
    #[arg(long, default_value_t = 0)]
    challenge_rate_ppm: u32,
    /// Overwrite an existing file.
    #[arg(long)]
    force: bool,
}

pub(super) fn run(a: InitArgs) -> Result<()> {
    let (address, chain, key) = a.file.sections()?;
    let pool = a
        .ringer_jobs
        .into_iter()
        .map(|spec| PoolJob {
            spec,
            replicas: 1,
            max_price_per_replica: a.ringer_max_price,
            bid_window_blocks: 10,
            exec_deadline_blocks: 30,
            class: gpuchain_auction::ClassRequirement::Any,
            region: None,
            draw_rows: 0,
        })
        .collect();
    let config = Config {
        chain,
        key,
        verifier: VerifierConfig {
            data_dir: a.file.data_dir.clone(),
            metrics_listen: a.metrics_listen,
            bond: a.bond,
            backend: a.backend,
            fetch_timeout_secs: 120,
            max_output_bytes: 1 << 30,
            allow_private_blob_hosts: false,
        },
        challenge: ChallengeConfig {
            enabled: !a.posters.is_empty(),
            rate_ppm: a.challenge_rate_ppm,
            every_blocks: 0,
            max_open: 4,
            max_total: 0,
            posters: a.posters,
            post_delay_max_blocks: 30,
            blob_listen: None,
            blob_url: None,
            pool,
        },
        serving: Default::default(),
    };
    a.file.write(&config, &address, a.force)
}
