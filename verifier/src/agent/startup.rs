//! Starting and stopping the daemon: load state, check the registration, start the metrics
//! server (and the ringer input server when configured), reconcile with the chain
//! (verdicts, commitments and ringer orders sent just before a crash; assignments made
//! while stopped), follow blocks from where the state left off, and stop cleanly on SIGTERM
//! or Ctrl-C.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{Context, Result};
use gpuchain_agent_kit::metrics::Published;
use gpuchain_agent_kit::run::follow_until_stopped;
use gpuchain_agent_kit::startup::{first_height, own_state, registered};
use gpuchain_compute::blob::{serve, BlobFetcher, BlobServer, BlobStore, FetchPolicy};
use gpuchain_compute::Backend;
use tokio::sync::mpsc;

use super::Agent;
use crate::chain::Chain;
use crate::check::Limits;
use crate::config::{AgentConfig, Config};
use crate::metrics::render;
use crate::state::State;

/// Runs the daemon until a signal.
pub(crate) async fn run(config: Config, rubber_stamp: bool) -> Result<()> {
    let chain = Chain::open(&config.chain, &config.key)?;
    let me = chain.address.to_string();
    let (file, state) = own_state(&config, &me, |s: &mut State| &mut s.verifier)?;
    let record = registered::<Config, _>(chain.me().await?, &me)?;
    if let Some(outcome) = chain
        .declare_serving_models(&config.serving)
        .await
        .context("declaring the serving models of [serving]")?
    {
        tracing::info!(height = outcome.height, "serving models declared");
    }
    let params = chain.verify_params().await?;
    let mut posters = Vec::new();
    if config.challenge.enabled {
        for name in &config.challenge.posters {
            posters.push((
                name.clone(),
                Chain::connect(&config.chain.node, &config.key.home, name)?,
            ));
        }
    }
    let backend = Backend::parse(&config.verifier.backend)?;
    let store = BlobStore::open(config.blob_dir())?;
    let policy = FetchPolicy::new(config.verifier.allow_private_blob_hosts);
    let fetcher = BlobFetcher::with_policy(store.clone(), policy)?;
    let http = policy.http_client().context("building the HTTP client")?;
    let metrics = Published::new(render(&State::default(), 0, 0, 0));
    let metrics_addr = metrics
        .serve(config.verifier.metrics_listen, String::new)
        .await
        .with_context(|| format!("starting /metrics on {}", config.verifier.metrics_listen))?;
    let _ringer_server = match config.challenge.blob_listen {
        Some(addr) if config.challenge.enabled => Some(
            serve(BlobServer::new(store), addr)
                .await
                .with_context(|| format!("starting the ringer input server on {addr}"))?,
        ),
        _ => None,
    };
    tracing::info!(verifier = %me, bonded = record.bonded, backend = %backend.name(), metrics = %metrics_addr,
        challenges = config.challenge.enabled, posters = posters.len(), "verifier agent starting");
    let (done_tx, mut done_rx) = mpsc::channel(16);
    let limits = Limits {
        fetch_timeout: Duration::from_secs(config.verifier.fetch_timeout_secs),
        max_output_bytes: config.verifier.max_output_bytes,
        policy,
    };
    let mut agent = Agent {
        chain,
        posters,
        file,
        state,
        fetcher,
        http,
        backend,
        limits,
        params,
        checking: BTreeSet::new(),
        preparing: None,
        done_tx,
        metrics,
        height: 0,
        bonded: record.bonded,
        rubber_stamp,
        serving_models: Default::default(),
        config,
    };
    let latest = agent.chain.client.latest_height().await?;
    agent.height = latest;
    agent.reconcile_ringers().await?;
    agent.reconcile_cases(latest).await?;
    let from = first_height(agent.state.last_height, latest);
    agent.save()?;
    let (client, chain) = (agent.chain.client.clone(), agent.config.chain.clone());
    follow_until_stopped(&mut agent, client, &chain, from, &mut done_rx).await?;
    agent.save()?;
    tracing::info!(
        checking = agent.checking.len(),
        "state saved; checks in flight restart on the next start"
    );
    Ok(())
}
