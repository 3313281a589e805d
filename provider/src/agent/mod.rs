//! The provider daemon (`gpuchain-provider run`): follows the chain block by block, bids on
//! orders it can serve, runs the jobs it wins, commits and reveals their results, and
//! records payments — with its state in a durable file so a restart resumes where it was.
//!
//! One task owns the state and sends every transaction (so nonces never race); jobs run in
//! their own tasks and report back over a channel.

mod appeal;
mod bidding;
mod compare;
mod execute;
mod leases;
mod serving;
mod startup;

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::Result;
use gpuchain_agent_kit::metrics::Published;
use gpuchain_auction::{
    LeaseCreatedEvent, LeasePaidEvent, OrderClearedEvent, OrderClosedEvent, OrderPostedEvent,
};
use gpuchain_client::follow::FollowedBlock;
use gpuchain_compute::blob::BlobFetcher;
use gpuchain_compute::Backend;
use gpuchain_staking::ProviderAttrs;
use gpuchain_verify::{VerdictKind, VerdictPostedEvent};
use tokio::sync::mpsc;

use crate::chain::Chain;
use crate::config::Config;
use crate::dishonest::Dishonest;
use crate::state::State;
use crate::store::JsonFile;

pub(crate) use startup::run;

/// Test and operator options of `run`.
#[derive(Clone, Debug, Default)]
pub(crate) struct RunOptions {
    /// Cheat this way (test only).
    pub(crate) dishonest: Option<Dishonest>,
    /// Sleep this long before executing each job (test only: makes "mid-job" observable).
    pub(crate) exec_delay: Duration,
}

/// A job task's report: lease id and result.
type Done = (u64, Result<execute::Produced, String>);

/// The running agent.
pub(crate) struct Agent {
    config: Config,
    chain: Chain,
    file: JsonFile,
    state: State,
    attrs: ProviderAttrs,
    fetcher: BlobFetcher,
    backend: Backend,
    options: RunOptions,
    /// Leases whose job task is in flight.
    running: BTreeSet<u64>,
    /// Serving leases reported unresponsive and not answered yet: lease → last block a
    /// heartbeat is taken.
    open_reports: std::collections::BTreeMap<u64, u64>,
    done_tx: mpsc::Sender<Done>,
    metrics: Published,
    height: u64,
}

impl gpuchain_agent_kit::run::Agent for Agent {
    type Done = Done;

    /// Handles one committed block: auction outcomes and payments from its events, new
    /// orders, then every active lease and pending bid.
    async fn on_block(&mut self, block: FollowedBlock) -> Result<()> {
        self.height = block.height;
        let me = self.chain.address;
        let mut posted = Vec::new();
        let mut closed = Vec::new();
        let mut faulty = Vec::new();
        for e in block.events() {
            if let Some(order) = e.decode::<OrderPostedEvent>() {
                posted.push(order.order_id);
            } else if let Some(order) = e.decode::<OrderClearedEvent>() {
                closed.push(order.order_id);
            } else if let Some(order) = e.decode::<OrderClosedEvent>() {
                closed.push(order.order_id);
            } else if let Some(lease) = e.decode::<LeaseCreatedEvent>() {
                if lease.provider == me {
                    self.won(lease.lease_id).await?;
                }
            } else if let Some(verdict) = e.decode::<VerdictPostedEvent>() {
                if verdict.verdict == VerdictKind::Faulty.name() && verdict.round == 0 {
                    faulty.push(verdict.lease_id);
                }
            } else if let Some(paid) = e.decode::<LeasePaidEvent>() {
                if paid.provider == me {
                    self.paid(paid.lease_id, paid.amount, block.height);
                }
            }
        }
        for lease_id in faulty {
            self.answer_faulty_verdict(lease_id).await;
        }
        for order_id in closed {
            self.auction_over(order_id);
        }
        for order_id in posted {
            self.consider(order_id).await?;
        }
        self.check_pending_bids().await?;
        self.drive_leases().await?;
        self.follow_serving(&block).await?;
        self.state.last_height = block.height;
        self.save()
    }

    async fn on_done(&mut self, done: Done) -> Result<()> {
        self.on_produced(done).await
    }
}

impl Agent {
    /// Persists the state and publishes its metrics; a failure to persist is fatal (the
    /// agent would forget bids).
    fn save(&mut self) -> Result<()> {
        self.file.save(&self.state)?;
        let capacity = self.config.capacity.max_concurrent_jobs;
        let metrics = crate::metrics::render(&self.state, self.height, capacity);
        self.metrics.publish(metrics);
        Ok(())
    }
}
