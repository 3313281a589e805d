//! The verifier daemon (`gpuchain-verifier run`): follows the chain block by block, takes
//! the assignments made to it, checks each result off the async runtime and posts its
//! verdict before the deadline, and plants, posts and reveals ringer challenges, with its
//! state in a durable file so a restart resumes where it was.
//!
//! One task owns the state and sends every transaction (so nonces never race); checks and
//! ringer preparations run in their own tasks and report back over a channel.

mod cases;
mod ringers;
mod serving;
mod startup;

use std::collections::BTreeSet;

use anyhow::Result;
use gpuchain_agent_kit::metrics::Published;
use gpuchain_auction::OrderPostedEvent;
use gpuchain_client::follow::FollowedBlock;
use gpuchain_compute::blob::BlobFetcher;
use gpuchain_compute::Backend;
use gpuchain_verify::{AssignedEvent, VerifyParams};
use tokio::sync::mpsc;

use crate::chain::Chain;
use crate::check::{Finding, Limits};
use crate::config::Config;
use crate::state::State;
use crate::store::JsonFile;

pub(crate) use startup::run;

/// A background task's report.
pub(crate) enum Done {
    /// A check finished: case key and finding (or why none can be given).
    Checked(String, Result<Finding, String>),
    /// A ringer is ready: its id, or why it could not be prepared.
    Prepared(u64, Result<Box<ringers::Ready>, String>),
    /// A serving audit finished: the claim and whether its answer is honest.
    Judged(u64, Result<bool, String>),
}

/// The running agent.
pub(crate) struct Agent {
    config: Config,
    chain: Chain,
    /// Ordinary accounts that post ringers, in turn.
    posters: Vec<(String, Chain)>,
    file: JsonFile,
    state: State,
    fetcher: BlobFetcher,
    http: reqwest::Client,
    backend: Backend,
    limits: Limits,
    params: VerifyParams,
    /// Case keys whose check is in flight.
    checking: BTreeSet<String>,
    /// A ringer being prepared.
    preparing: Option<u64>,
    done_tx: mpsc::Sender<Done>,
    metrics: Published,
    height: u64,
    bonded: u128,
    /// Test only: every verdict `honest`, nothing checked.
    rubber_stamp: bool,
    /// Chat models loaded for serving audits.
    serving_models: serving::Loaded,
}

impl gpuchain_agent_kit::run::Agent for Agent {
    type Done = Done;

    /// Handles one committed block: assignments to this verifier and the orders seen, then
    /// the ringer schedule and every open ringer.
    async fn on_block(&mut self, block: FollowedBlock) -> Result<()> {
        self.height = block.height;
        let me = self.chain.address;
        let mut orders = 0u64;
        for e in block.events() {
            if let Some(a) = e.decode::<AssignedEvent>() {
                if a.verifier == me {
                    let provider = a.provider.to_string();
                    self.assigned(a.lease_id, a.round, a.deadline, provider, block.height);
                }
            } else if let Some(j) = e.decode::<gpuchain_serving::ServingJurorEvent>() {
                if j.verifier == me {
                    self.drawn_for_claim(j.claim_id).await;
                }
            } else if let Some(order) = e.decode::<OrderPostedEvent>() {
                let client = order.client.to_string();
                if !self.state.is_poster(&client)
                    && !self.posters.iter().any(|(_, p)| p.address == order.client)
                {
                    orders += 1;
                }
            }
        }
        self.state.counters.orders_seen += orders;
        self.step_down_from_late_checks().await?;
        if block.height % 20 == 0 {
            if let Ok(Some(v)) = self.chain.me().await {
                self.bonded = v.bonded;
            }
        }
        self.schedule_ringer(orders).await?;
        self.drive_ringers().await?;
        self.state.last_height = block.height;
        self.save()
    }

    async fn on_done(&mut self, done: Done) -> Result<()> {
        match done {
            Done::Checked(key, finding) => self.checked(key, finding).await,
            Done::Prepared(id, ready) => self.prepared(id, ready).await,
            Done::Judged(claim_id, found) => self.judged(claim_id, found).await,
        }
    }
}

impl Agent {
    /// Persists the state and publishes its metrics; a failure to persist is fatal (the
    /// agent would forget salts).
    fn save(&mut self) -> Result<()> {
        self.file.save(&self.state)?;
        let checking = self.checking.len();
        let metrics = crate::metrics::render(&self.state, self.height, checking, self.bonded);
        self.metrics.publish(metrics);
        Ok(())
    }
}
