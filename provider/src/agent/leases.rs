//! Leases: from winning to payment. Each block every active lease is compared with its
//! state on chain and moved one step: run the job, commit (salt and result saved first),
//! reveal once every replica committed or the deadline passed, then wait to be paid.
//! A lease the agent cannot honour is reported (state `failed`, logged with the reason) and
//! handed back with `ReleaseLease`, so the client is refunded at once and the smaller
//! abandoned-lease slash applies. A networked training lease makes the agent one worker of
//! the client's coordinator.

use anyhow::Result;
use gpuchain_auction::{
    commitment, AuctionMsg, Lease, LeaseState, MsgCommitResult, MsgReleaseLease, MsgRevealResult,
};
use gpuchain_jobspec::JobSpec;

use super::{execute, Agent, Done};
use crate::dishonest::{random_bytes, Dishonest};
use crate::state::{BidStatus, LeaseRecord, Stage};

/// Most failed transactions for one lease step before the agent stops retrying it.
pub(super) const MAX_TX_FAILURES: u32 = 3;

fn hex32(text: Option<&str>) -> Option<[u8; 32]> {
    hex::decode(text?).ok()?.try_into().ok()
}

fn record(lease: &Lease) -> LeaseRecord {
    LeaseRecord {
        lease_id: lease.id,
        order_id: lease.order_id,
        price: lease.price,
        created_height: lease.created_height,
        deadline_height: lease.deadline_height,
        reveal_end_height: lease.reveal_end_height,
        stage: Stage::Won,
        result_hash: None,
        salt: None,
        chain_state: lease.state.name().into(),
        reason: None,
        paid: 0,
        attempts: 0,
        tx_failures: 0,
        fetch_seconds: 0.0,
        execute_seconds: 0.0,
        committed_height: 0,
        revealed_height: 0,
        paid_height: 0,
        appealed_height: None,
        compared_height: None,
    }
}

impl Agent {
    /// A lease was created for us.
    pub(super) async fn won(&mut self, lease_id: u64) -> Result<()> {
        if self.state.leases.contains_key(&lease_id) {
            return Ok(());
        }
        let lease = match self.chain.lease(lease_id).await {
            Ok(Some(l)) => l,
            Ok(None) => return Ok(()),
            Err(e) => {
                tracing::warn!(lease_id, error = %e, "cannot read lease");
                return Ok(());
            }
        };
        self.adopt(&lease);
        Ok(())
    }

    fn adopt(&mut self, lease: &Lease) {
        tracing::info!(
            lease_id = lease.id,
            order_id = lease.order_id,
            price = lease.price,
            deadline = lease.deadline_height,
            "lease won"
        );
        self.state.counters.wins += 1;
        self.state.leases.insert(lease.id, record(lease));
        if let Some(b) = self.state.bids.get_mut(&lease.order_id) {
            b.status = BidStatus::Won;
        }
    }

    /// Adds leases the chain gave us that the state does not know (won while stopped).
    pub(super) async fn adopt_my_leases(&mut self) -> Result<()> {
        for id in self.chain.my_lease_ids().await? {
            if self.state.leases.contains_key(&id) {
                continue;
            }
            if let Some(lease) = self.chain.lease(id).await? {
                if !lease.state.is_final() {
                    self.adopt(&lease);
                }
            }
        }
        Ok(())
    }

    /// We were paid for a lease.
    pub(super) fn paid(&mut self, lease_id: u64, amount: u128, height: u64) {
        if let Some(l) = self.state.leases.get_mut(&lease_id) {
            // The lease may already read `Paid` on chain (its block's state is read before its
            // events arrive): the amount is only known from the event, so take it once.
            if l.paid == 0 {
                l.stage = Stage::Paid;
                l.paid = amount;
                l.paid_height = height;
                l.reason = None;
                l.chain_state = LeaseState::Paid.name().into();
                self.state.counters.earnings = self.state.counters.earnings.saturating_add(amount);
                tracing::info!(lease_id, amount, "paid");
            }
        }
    }

    /// Moves every active lease one step.
    pub(super) async fn drive_leases(&mut self) -> Result<()> {
        let ids: Vec<u64> = self.state.active_leases().map(|l| l.lease_id).collect();
        for id in ids {
            if self.running.contains(&id) {
                continue;
            }
            match self.chain.lease(id).await {
                Ok(Some(lease)) => self.step(lease).await?,
                Ok(None) => {}
                Err(e) => tracing::warn!(lease_id = id, error = %e, "cannot read lease"),
            }
        }
        Ok(())
    }

    async fn step(&mut self, lease: Lease) -> Result<()> {
        let cheat = self.options.dishonest;
        let Some(rec) = self.state.leases.get_mut(&lease.id) else {
            return Ok(());
        };
        rec.chain_state = lease.state.name().into();
        match lease.state {
            // Paid in a block whose events are still to come: the event brings the amount.
            LeaseState::Paid if lease.payout_height.is_some_and(|h| h > self.height) => {}
            LeaseState::Paid => {
                // Paid while we were not watching the event.
                rec.stage = Stage::Paid;
                rec.reason = Some("paid while the agent was away; amount not seen".into());
            }
            LeaseState::Faulted
            | LeaseState::Missed
            | LeaseState::Refunded
            | LeaseState::Released => {
                tracing::warn!(
                    lease_id = lease.id,
                    state = lease.state.name(),
                    "lease ended unpaid"
                );
                rec.stage = Stage::Lost;
                rec.reason.get_or_insert_with(|| lease.state.name().into());
            }
            LeaseState::Open => match rec.stage {
                Stage::Won if cheat == Some(Dishonest::Abandon) => {
                    rec.reason.get_or_insert_with(|| {
                        tracing::warn!(lease_id = lease.id, "dishonest: abandoning the lease");
                        "abandoned (test mode)".into()
                    });
                }
                Stage::Won if self.height <= lease.deadline_height => {
                    self.start_job(&lease).await?
                }
                Stage::Executed | Stage::Committed if self.height <= lease.deadline_height => {
                    self.commit(lease.id).await?
                }
                _ => {}
            },
            LeaseState::Committed => {
                if matches!(rec.stage, Stage::Won | Stage::Executed) {
                    rec.stage = Stage::Committed;
                }
                self.maybe_reveal(&lease).await?;
            }
            LeaseState::Comparing => {
                rec.stage = Stage::Revealed;
                self.compare_replicas(&lease).await?;
            }
            LeaseState::Revealed
            | LeaseState::Accepted
            | LeaseState::AuditPending
            | LeaseState::AuditFollowing
            | LeaseState::Disputed
            | LeaseState::AvailabilityPending => {
                if rec.stage != Stage::Revealed {
                    rec.stage = Stage::Revealed;
                    rec.revealed_height = rec.revealed_height.max(self.height);
                }
            }
        }
        Ok(())
    }

    async fn start_job(&mut self, lease: &Lease) -> Result<()> {
        let order = match self.chain.order(lease.order_id).await {
            Ok(Some(o)) => o,
            Ok(None) => {
                tracing::warn!(lease_id = lease.id, "the lease's order is gone");
                return Ok(());
            }
            Err(e) => {
                tracing::warn!(lease_id = lease.id, error = %e, "cannot read the lease's order");
                return Ok(());
            }
        };
        let Some(rec) = self.state.leases.get_mut(&lease.id) else {
            return Ok(());
        };
        rec.attempts += 1;
        if rec.attempts > 1 {
            tracing::info!(
                lease_id = lease.id,
                attempt = rec.attempts,
                "resuming job after a restart"
            );
        } else {
            tracing::info!(lease_id = lease.id, "running job");
        }
        self.running.insert(lease.id);
        let tx = self.done_tx.clone();
        let id = lease.id;
        match order.job {
            JobSpec::Training(spec) if spec.coordinator_url.is_some() => {
                let index = self.worker_index(lease).await;
                let coordinator = spec.coordinator_url.clone().unwrap_or_default();
                let work = execute::produce_training(
                    spec,
                    coordinator,
                    index,
                    self.fetcher.clone(),
                    self.backend,
                );
                tokio::spawn(async move {
                    let _ = tx.send((id, work.await)).await;
                });
            }
            job => {
                let work = execute::produce(
                    job,
                    self.fetcher.clone(),
                    self.backend,
                    self.options.dishonest,
                    self.state.last_result.clone(),
                    self.options.exec_delay,
                );
                tokio::spawn(async move {
                    let _ = tx.send((id, work.await)).await;
                });
            }
        }
        // The attempt is durable before the job runs.
        self.save()
    }

    /// This lease's worker index in a networked training job: its rank by id among the
    /// order's leases (every worker computes the same ranks from chain state).
    async fn worker_index(&self, lease: &Lease) -> u32 {
        match self.chain.leases_of_order(lease.order_id).await {
            Ok(leases) => leases.iter().filter(|l| l.id < lease.id).count() as u32,
            Err(e) => {
                tracing::warn!(lease_id = lease.id, error = %e, "cannot list the order's leases");
                0
            }
        }
    }

    /// Hands a lease back: the client is refunded now and the smaller abandoned-lease slash
    /// applies instead of a missed deadline.
    async fn release(&mut self, lease_id: u64) -> Result<()> {
        let msg = AuctionMsg::ReleaseLease(MsgReleaseLease { lease_id });
        match self.chain.auction(msg).await.and_then(|o| o.ok()) {
            Ok(o) => tracing::warn!(lease_id, height = o.height, "lease handed back"),
            Err(e) => tracing::error!(lease_id, error = %format!("{e:#}"),
                "handing the lease back failed; it will be marked missed at its deadline"),
        }
        Ok(())
    }

    /// A job task finished.
    pub(super) async fn on_produced(&mut self, done: Done) -> Result<()> {
        let (lease_id, result) = done;
        self.running.remove(&lease_id);
        let cheat = self.options.dishonest;
        let Some(rec) = self.state.leases.get_mut(&lease_id) else {
            return Ok(());
        };
        match result {
            Ok(p) => {
                let real = hex::encode(p.result_hash);
                let committed = if cheat == Some(Dishonest::Copy) {
                    hex::encode(random_bytes(32)) // Nothing real: it means to copy later.
                } else {
                    real.clone()
                };
                rec.result_hash = Some(committed);
                rec.salt = Some(hex::encode(random_bytes(32)));
                rec.fetch_seconds = p.fetch_seconds;
                rec.execute_seconds = p.execute_seconds;
                rec.stage = Stage::Executed;
                self.state.last_result = Some(real.clone());
                self.state.counters.jobs_completed += 1;
                tracing::info!(lease_id, result = %real, fetch_s = p.fetch_seconds,
                    execute_s = p.execute_seconds, "job done; result served by hash");
                // Salt and hash are durable before the commitment leaves.
                self.save()?;
                self.commit(lease_id).await?;
            }
            Err(reason) => {
                tracing::error!(lease_id, %reason, "cannot honour the lease; handing it back");
                rec.stage = Stage::Failed;
                rec.reason = Some(reason);
                self.state.counters.jobs_failed += 1;
                self.save()?;
                return self.release(lease_id).await;
            }
        }
        self.save()
    }

    async fn commit(&mut self, lease_id: u64) -> Result<()> {
        let Some(rec) = self.state.leases.get(&lease_id) else {
            return Ok(());
        };
        let (Some(hash), Some(salt)) = (
            hex32(rec.result_hash.as_deref()),
            hex32(rec.salt.as_deref()),
        ) else {
            return Ok(());
        };
        if rec.tx_failures >= MAX_TX_FAILURES {
            return Ok(());
        }
        let msg = AuctionMsg::CommitResult(MsgCommitResult {
            lease_id,
            commitment: commitment(&hash, &self.chain.address, &salt),
        });
        let outcome = self.chain.auction(msg).await.and_then(|o| o.ok());
        let Some(rec) = self.state.leases.get_mut(&lease_id) else {
            return Ok(());
        };
        match outcome {
            Ok(o) => {
                rec.stage = Stage::Committed;
                rec.committed_height = o.height;
                tracing::info!(lease_id, height = o.height, "result committed");
            }
            Err(e) => {
                rec.tx_failures += 1;
                tracing::warn!(lease_id, error = %format!("{e:#}"), "commit failed");
            }
        }
        self.save()
    }

    async fn maybe_reveal(&mut self, lease: &Lease) -> Result<()> {
        let cheat = self.options.dishonest;
        let Some(rec) = self.state.leases.get(&lease.id) else {
            return Ok(());
        };
        if rec.tx_failures >= MAX_TX_FAILURES {
            return Ok(());
        }
        let (Some(mut hash), Some(salt)) = (
            hex32(rec.result_hash.as_deref()),
            hex32(rec.salt.as_deref()),
        ) else {
            if rec.reason.is_none() {
                tracing::error!(
                    lease_id = lease.id,
                    "committed but the salt is lost; cannot reveal"
                );
            }
            return Ok(());
        };
        let past_deadline = self.height > lease.deadline_height;
        let others = self.chain.leases_of_order(lease.order_id).await?;
        let all_committed = others.iter().all(|l| l.state != LeaseState::Open);
        if !past_deadline && !all_committed {
            return Ok(());
        }
        match cheat {
            Some(Dishonest::LateReveal) if self.height <= lease.reveal_end_height => return Ok(()),
            Some(Dishonest::Copy) => {
                let copied = others
                    .iter()
                    .filter(|l| l.id != lease.id)
                    .find_map(|l| l.result_hash);
                let Some(copied) = copied else {
                    return Ok(()); // Wait for someone to reveal.
                };
                tracing::warn!(
                    lease_id = lease.id,
                    "dishonest: revealing a copied result hash"
                );
                hash = copied;
            }
            _ => {}
        }
        let msg = AuctionMsg::RevealResult(MsgRevealResult {
            lease_id: lease.id,
            result_hash: hash,
            salt,
        });
        let outcome = self.chain.auction(msg).await.and_then(|o| o.ok());
        let Some(rec) = self.state.leases.get_mut(&lease.id) else {
            return Ok(());
        };
        match outcome {
            Ok(o) => {
                rec.stage = Stage::Revealed;
                rec.revealed_height = o.height;
                tracing::info!(lease_id = lease.id, height = o.height, "result revealed");
            }
            Err(e) => {
                rec.tx_failures += 1;
                rec.reason = Some(format!("reveal failed: {e:#}"));
                tracing::warn!(lease_id = lease.id, error = %format!("{e:#}"), "reveal failed");
            }
        }
        self.save()
    }
}
