//! Assignments: take one, gather what the check needs from the chain (lease, order,
//! provider endpoint, worker index), run the check in its own task, then post the verdict
//! with the agent's own output hash before the deadline. First-round audits run on the
//! configured (fast) backend, and so do spot checks of `honest` verdicts; disputes, appeals
//! and tie-breaks on the canonical path. An accepted lease whose output nobody else fetched
//! is only fetched and hash-checked (availability).

use anyhow::{Context, Result};
use gpuchain_auction::LeaseState;
use gpuchain_compute::Backend;
use gpuchain_verify::{
    CaseStage as ChainStage, MsgRecuse, MsgSubmitVerdict, VerdictKind, VerifyMsg,
};

use super::{Agent, Done};
use crate::chain::Chain;
use crate::check::{check, Finding, Job};
use crate::state::{CaseRecord, CaseStage};

/// Reads what checking a lease needs.
async fn job_of(chain: &Chain, lease_id: u64, round: u8, fast: Backend) -> Result<Job> {
    let lease = chain
        .lease(lease_id)
        .await?
        .with_context(|| format!("no lease {lease_id}"))?;
    let order = chain
        .order(lease.order_id)
        .await?
        .with_context(|| format!("no order {}", lease.order_id))?;
    let result_hash = lease
        .result_hash
        .with_context(|| format!("lease {lease_id} revealed no result"))?;
    let provider = chain
        .provider(&lease.provider)
        .await?
        .with_context(|| format!("provider {} is not registered", lease.provider))?;
    let leases = chain.leases_of_order(order.id).await?;
    let worker = leases.iter().position(|l| l.id == lease_id).unwrap_or(0);
    // A spot check (a second round nobody appealed) is a second independent opinion on the
    // fast path; appeals, tie-breaks and disputes go to the canonical path.
    let spot_check = round == 1
        && chain
            .case(lease_id)
            .await?
            .is_some_and(|c| c.appellant.is_none());
    let canonical = (round > 0 && !spot_check) || lease.state == LeaseState::Disputed;
    Ok(Job {
        lease_id,
        spec: order.job,
        result_hash,
        endpoint_url: provider.attrs.endpoint_url,
        worker: u32::try_from(worker).unwrap_or(0),
        backend: if canonical { Backend::Canonical } else { fast },
        availability_only: lease.state == LeaseState::AvailabilityPending,
    })
}

impl Agent {
    /// Records a new assignment and starts its check.
    pub(super) fn assigned(
        &mut self,
        lease_id: u64,
        round: u8,
        deadline: u64,
        provider: String,
        height: u64,
    ) {
        let key = CaseRecord::key(lease_id, round);
        if self.state.cases.contains_key(&key) {
            return;
        }
        tracing::info!(lease_id, round, deadline, %provider, "assigned");
        self.state.counters.assignments += 1;
        self.state.cases.insert(
            key.clone(),
            CaseRecord {
                lease_id,
                round,
                provider,
                deadline,
                assigned_height: height,
                stage: CaseStage::Checking,
                verdict: None,
                output_hash: None,
                backend: String::new(),
                detail: String::new(),
                fetch_seconds: 0.0,
                execute_seconds: 0.0,
                posted_height: 0,
            },
        );
        self.start_check(key);
    }

    /// Spawns the check of a recorded assignment.
    pub(super) fn start_check(&mut self, key: String) {
        let Some(rec) = self.state.cases.get(&key) else {
            return;
        };
        if !self.checking.insert(key.clone()) {
            return;
        }
        let (chain, fetcher, http, limits, fast) = (
            self.chain.clone(),
            self.fetcher.clone(),
            self.http.clone(),
            self.limits.clone(),
            self.backend,
        );
        let (lease_id, round, tx) = (rec.lease_id, rec.round, self.done_tx.clone());
        let rubber_stamp = self.rubber_stamp;
        tokio::spawn(async move {
            let result = match job_of(&chain, lease_id, round, fast).await {
                Ok(job) if rubber_stamp => {
                    tracing::warn!(lease_id, round, "test mode: honest without checking");
                    Ok(Finding::rubber_stamp(&job))
                }
                Ok(job) if job.availability_only => {
                    tracing::info!(lease_id, round, "checking the output can be fetched");
                    check(job, fetcher, http, limits).await
                }
                Ok(job) => {
                    tracing::info!(lease_id, round, backend = %job.backend.name(), "re-executing");
                    check(job, fetcher, http, limits).await
                }
                Err(e) => Err(format!("{e:#}")),
            };
            let _ = tx.send(Done::Checked(key, result)).await;
        });
    }

    /// A check finished: post its verdict, or record why there is none.
    pub(super) async fn checked(
        &mut self,
        key: String,
        result: Result<Finding, String>,
    ) -> Result<()> {
        self.checking.remove(&key);
        let Some(rec) = self.state.cases.get_mut(&key) else {
            return Ok(());
        };
        if rec.stage != CaseStage::Checking {
            // Given up at its deadline (the agent stepped down): the result comes too late.
            return Ok(());
        }
        match result {
            Err(why) => {
                tracing::warn!(lease_id = rec.lease_id, round = rec.round, reason = %why, "no verdict: the result cannot be checked; stepping down");
                return self.give_up(&key, why).await;
            }
            Ok(f) => {
                if f.fetch_failure {
                    self.state.counters.fetch_failures += 1;
                }
                if f.training {
                    self.state.counters.training_audits += 1;
                }
                rec.stage = CaseStage::Posting;
                rec.verdict = Some(f.verdict.name().to_string());
                rec.output_hash = Some(hex::encode(f.output_hash));
                rec.backend = f.backend;
                rec.detail = f.detail;
                rec.fetch_seconds = f.fetch_seconds;
                rec.execute_seconds = f.execute_seconds;
                // Record the verdict before sending it.
                self.save()?;
                self.post_verdict(&key).await?;
            }
        }
        self.save()
    }

    /// Steps down from the cases whose checks are still running in the last block before
    /// their deadline: a verdict could no longer land in time, and a miss slashes and jails.
    pub(super) async fn step_down_from_late_checks(&mut self) -> Result<()> {
        let height = self.height;
        let late: Vec<(String, u64)> = self
            .checking
            .iter()
            .filter_map(|key| {
                let rec = self.state.cases.get(key)?;
                let late = rec.stage == CaseStage::Checking && rec.deadline <= height + 1;
                late.then(|| (key.clone(), rec.lease_id))
            })
            .collect();
        for (key, lease_id) in late {
            self.checking.remove(&key);
            tracing::warn!(lease_id, "the check did not finish in time; stepping down");
            let why = "the check did not finish before the verdict deadline".to_string();
            self.give_up(&key, why).await?;
        }
        Ok(())
    }

    /// Records case `key` as not checked, for `why`, and steps down from it: no verdict would
    /// miss the deadline, which slashes and jails; a recusal costs nothing and another
    /// verifier is drawn.
    async fn give_up(&mut self, key: &str, why: String) -> Result<()> {
        let Some(rec) = self.state.cases.get_mut(key) else {
            return Ok(());
        };
        rec.stage = CaseStage::Failed;
        rec.detail = why;
        let lease_id = rec.lease_id;
        self.state.counters.verdicts_failed += 1;
        self.save()?;
        let msg = VerifyMsg::Recuse(MsgRecuse { lease_id });
        match self.chain.verify(msg).await.and_then(|o| o.ok()) {
            Ok(o) => tracing::info!(lease_id, height = o.height, "stepped down from the case"),
            Err(e) => tracing::warn!(lease_id, error = %format!("{e:#}"), "recusal not taken"),
        }
        Ok(())
    }

    /// Sends the recorded verdict of `key`.
    pub(super) async fn post_verdict(&mut self, key: &str) -> Result<()> {
        let Some(rec) = self.state.cases.get(key).cloned() else {
            return Ok(());
        };
        let verdict = if rec.verdict.as_deref() == Some("faulty") {
            VerdictKind::Faulty
        } else {
            VerdictKind::Honest
        };
        let output_hash: [u8; 32] = rec
            .output_hash
            .as_deref()
            .and_then(|h| hex::decode(h).ok())
            .and_then(|b| b.try_into().ok())
            .unwrap_or([0; 32]);
        let msg = VerifyMsg::SubmitVerdict(MsgSubmitVerdict {
            lease_id: rec.lease_id,
            output_hash,
            verdict,
        });
        let outcome = self.chain.verify(msg).await.and_then(|o| o.ok());
        let rec = self.state.cases.get_mut(key).context("case vanished")?;
        match outcome {
            Ok(o) => {
                rec.stage = CaseStage::Posted;
                rec.posted_height = o.height;
                match verdict {
                    VerdictKind::Honest => self.state.counters.verdicts_honest += 1,
                    VerdictKind::Faulty => self.state.counters.verdicts_faulty += 1,
                }
                tracing::info!(lease_id = rec.lease_id, round = rec.round, verdict = verdict.name(), detail = %rec.detail, height = o.height, "verdict posted");
            }
            Err(e) => {
                tracing::warn!(lease_id = rec.lease_id, round = rec.round, error = %format!("{e:#}"), "verdict transaction failed");
                rec.stage = CaseStage::Failed;
                rec.detail = format!("{}; posting failed: {e:#}", rec.detail);
                self.state.counters.verdicts_failed += 1;
            }
        }
        Ok(())
    }

    /// After a restart: checks that were in flight start again, verdicts that were being
    /// sent are looked up on chain (and sent if missing), and assignments made while the
    /// agent was down are taken.
    pub(super) async fn reconcile_cases(&mut self, height: u64) -> Result<()> {
        let me = self.chain.address;
        for case in self.chain.cases().await? {
            if case.stage == ChainStage::AwaitingVerdict && case.assignee == Some(me) {
                let key = CaseRecord::key(case.lease_id, case.round);
                if !self.state.cases.contains_key(&key) {
                    tracing::info!(
                        lease_id = case.lease_id,
                        round = case.round,
                        "assignment made while stopped"
                    );
                    let provider = case.provider.to_string();
                    self.assigned(
                        case.lease_id,
                        case.round,
                        case.deadline_height,
                        provider,
                        height,
                    );
                }
            }
        }
        let keys: Vec<(String, CaseStage, u64, u8)> = self
            .state
            .cases
            .iter()
            .filter(|(_, r)| matches!(r.stage, CaseStage::Checking | CaseStage::Posting))
            .map(|(k, r)| (k.clone(), r.stage, r.lease_id, r.round))
            .collect();
        for (key, stage, lease_id, round) in keys {
            let case = self.chain.case(lease_id).await?;
            let posted = case
                .as_ref()
                .is_some_and(|c| c.verdicts.iter().any(|v| v.verifier == me) && c.round >= round);
            let awaiting = case.as_ref().is_some_and(|c| {
                c.stage == ChainStage::AwaitingVerdict && c.assignee == Some(me) && c.round == round
            });
            let Some(rec) = self.state.cases.get_mut(&key) else {
                continue;
            };
            if posted {
                tracing::info!(
                    lease_id,
                    round,
                    "verdict sent before the restart is on chain"
                );
                rec.stage = CaseStage::Posted;
            } else if !awaiting {
                rec.stage = CaseStage::Failed;
                rec.detail = "the assignment ended while the agent was stopped".into();
            } else if stage == CaseStage::Posting {
                tracing::info!(
                    lease_id,
                    round,
                    "sending the verdict recorded before the restart"
                );
                self.post_verdict(&key).await?;
            } else {
                self.start_check(key);
            }
        }
        Ok(())
    }
}
