//! Starting and stopping the daemon: load state, check the registration, reconcile with the
//! chain (bids sent just before a crash, leases won while stopped), start the blob and
//! metrics servers, follow blocks from where the state left off, and stop cleanly on
//! SIGTERM or Ctrl-C.

use std::collections::BTreeSet;

use anyhow::{Context, Result};
use gpuchain_agent_kit::metrics::Published;
use gpuchain_agent_kit::run::follow_until_stopped;
use gpuchain_agent_kit::startup::{first_height, own_state, registered};
use gpuchain_compute::blob::{serve, BlobFetcher, BlobServer, BlobStore, FetchPolicy};
use gpuchain_compute::Backend;
use tokio::sync::mpsc;

use super::{Agent, RunOptions};
use crate::chain::Chain;
use crate::config::{AgentConfig, Config};
use crate::metrics::{gpu_utilisation, render};
use crate::state::{BidStatus, State};

/// Runs the daemon until a signal.
pub(crate) async fn run(config: Config, options: RunOptions) -> Result<()> {
    let chain = Chain::open(&config.chain, &config.key)?;
    let me = chain.address.to_string();
    let (file, state) = own_state(&config, &me, |s: &mut State| &mut s.provider)?;
    let provider = registered::<Config, _>(chain.me().await?, &me)?;
    let backend = Backend::parse(&config.provider.backend)?;
    let store = BlobStore::open(config.blob_dir())?;
    let policy = FetchPolicy::new(config.provider.allow_private_blob_hosts);
    let fetcher = BlobFetcher::with_policy(store.clone(), policy)?;
    let (blob_addr, _server) = serve(BlobServer::new(store), config.provider.listen)
        .await
        .with_context(|| format!("starting the blob server on {}", config.provider.listen))?;
    let metrics = Published::new(render(&State::default(), 0, 0));
    let metrics_addr = metrics
        .serve(config.provider.metrics_listen, gpu_utilisation)
        .await
        .with_context(|| format!("starting /metrics on {}", config.provider.metrics_listen))?;
    if let Some(cheat) = options.dishonest {
        tracing::warn!(?cheat, "DISHONEST TEST MODE: this agent cheats on purpose");
    }
    tracing::info!(provider = %me, class = ?provider.attrs.class, backend = %backend.name(),
        blobs = %blob_addr, metrics = %metrics_addr, endpoint = %provider.attrs.endpoint_url,
        "provider agent starting");
    let (done_tx, mut done_rx) = mpsc::channel(16);
    let mut agent = Agent {
        attrs: provider.attrs,
        chain,
        file,
        state,
        fetcher,
        backend,
        options,
        running: BTreeSet::new(),
        open_reports: Default::default(),
        done_tx,
        metrics,
        height: 0,
        config,
    };
    let latest = agent.chain.client.latest_height().await?;
    agent.height = latest;
    let from = agent.reconcile(latest).await?;
    let (client, chain) = (agent.chain.client.clone(), agent.config.chain.clone());
    follow_until_stopped(&mut agent, client, &chain, from, &mut done_rx).await?;
    agent.save()?;
    let running = agent.running.len();
    tracing::info!(
        running,
        "state saved; jobs in flight resume on the next start"
    );
    Ok(())
}

impl Agent {
    /// Brings the state in line with the chain after a (re)start; returns the first height
    /// to follow.
    async fn reconcile(&mut self, latest: u64) -> Result<u64> {
        let submitting: Vec<u64> = self
            .state
            .bids
            .values()
            .filter(|b| b.status == BidStatus::Submitting)
            .map(|b| b.order_id)
            .collect();
        for order_id in submitting {
            let on_chain = self.chain.my_bid(order_id).await?;
            if let Some(b) = self.state.bids.get_mut(&order_id) {
                if let Some(bid) = on_chain {
                    b.status = BidStatus::Placed;
                    b.bid_height = bid.height;
                    self.state.counters.bids += 1;
                    tracing::info!(order_id, "bid sent before the restart is on chain");
                } else {
                    b.status = BidStatus::Failed;
                    tracing::warn!(
                        order_id,
                        "bid sent before the restart is not on chain; not sending it again"
                    );
                }
            }
        }
        self.adopt_my_leases().await?;
        if self.state.last_height == 0 {
            // First start: take the open orders now, then follow new blocks.
            for order in self.chain.open_orders().await? {
                self.consider(order.id).await?;
            }
        }
        let from = first_height(self.state.last_height, latest);
        let resumable = self.state.active_leases().count();
        if resumable > 0 {
            tracing::info!(leases = resumable, "active leases to resume");
        }
        self.save()?;
        Ok(from)
    }
}
