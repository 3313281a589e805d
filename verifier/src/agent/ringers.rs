//! The ringer schedule: at the configured rate, prepare a ringer (fresh input, expected
//! answer on the canonical path) in its own task, record its salt and expected hash, commit
//! the challenge, have an ordinary poster account post the order at a random later height,
//! and reveal once every lease of the order has been judged (before an accepted lease is
//! paid). Each poster posts one ringer only: the reveal makes it public.

use anyhow::Result;
use gpuchain_auction::{AuctionMsg, Lease, OrderPostedEvent, OrderState};
use gpuchain_compute::blob::fetch_output;
use gpuchain_compute::{compare, fetch_job_blobs};
use gpuchain_jobspec::{BlobHash, JobSpec};
use gpuchain_tx::Msg;
use gpuchain_verify::{
    challenge_commitment, ChallengeCommittedEvent, ChallengeRevealedEvent, MsgCommitChallenge,
    MsgRevealChallenge, VerifyMsg,
};
use rand_core::{OsRng, RngCore};

use super::{Agent, Done};
use crate::ringer::{load_spec, prepare};
use crate::state::{RingerRecord, RingerStage};

/// A prepared ringer.
pub(crate) struct Ready {
    order: gpuchain_auction::MsgPostOrder,
    expected: [u8; 32],
    salt: [u8; 32],
    poster: usize,
}

fn hash32(hex_text: &str) -> [u8; 32] {
    hex::decode(hex_text)
        .ok()
        .and_then(|b| b.try_into().ok())
        .unwrap_or([0; 32])
}

impl Agent {
    /// Starts preparing a ringer when one is due.
    pub(super) async fn schedule_ringer(&mut self, orders_seen: u64) -> Result<()> {
        let c = &self.config.challenge;
        if !c.enabled || self.posters.is_empty() || c.pool.is_empty() {
            return Ok(());
        }
        let rate = if c.rate_ppm > 0 {
            c.rate_ppm
        } else {
            self.params.challenge_rate_ppm
        };
        if c.every_blocks == 0 {
            self.state.ringer_credit_ppm = self
                .state
                .ringer_credit_ppm
                .saturating_add(orders_seen.saturating_mul(u64::from(rate)));
        }
        let capped = (c.max_total > 0 && self.state.next_ringer >= c.max_total)
            || self.state.open_ringers() >= c.max_open as usize
            || self.preparing.is_some();
        if capped {
            return Ok(());
        }
        let due = if c.every_blocks > 0 {
            self.height >= self.state.last_ringer_height.saturating_add(c.every_blocks)
        } else {
            self.state.ringer_credit_ppm >= 1_000_000
        };
        if !due {
            return Ok(());
        }
        if c.every_blocks == 0 {
            self.state.ringer_credit_ppm -= 1_000_000;
        }
        let used: std::collections::BTreeSet<&str> = self
            .state
            .ringers
            .values()
            .map(|r| r.poster_key.as_str())
            .collect();
        let Some(poster) = self
            .posters
            .iter()
            .position(|(key, _)| !used.contains(key.as_str()))
        else {
            // This ringer is skipped (its credit or its turn spent): one warning per ringer.
            self.state.last_ringer_height = self.height;
            tracing::warn!("every poster has posted a ringer; configure fresh ones");
            return Ok(());
        };
        let id = self.state.next_ringer;
        self.state.next_ringer += 1;
        self.state.last_ringer_height = self.height;
        let pool = c.pool[(id as usize) % c.pool.len()].clone();
        let blob_url = c.blob_url.clone();
        let (fetcher, tx) = (self.fetcher.clone(), self.done_tx.clone());
        let mut salt = [0u8; 32];
        OsRng.fill_bytes(&mut salt);
        self.preparing = Some(id);
        tracing::info!(ringer = id, job = %pool.spec.display(), "preparing a ringer");
        tokio::spawn(async move {
            let work = async {
                let spec = load_spec(&pool).map_err(|e| format!("{e:#}"))?;
                fetch_job_blobs(&spec, &fetcher, &|_| {})
                    .await
                    .map_err(|e| format!("fetching the pool job: {e}"))?;
                let store = fetcher.store().clone();
                let p = tokio::task::spawn_blocking(move || {
                    prepare(&pool, &spec, &store, blob_url.as_deref(), &salt)
                })
                .await
                .map_err(|e| format!("ringer task panicked: {e}"))?
                .map_err(|e| format!("{e:#}"))?;
                Ok(Box::new(Ready {
                    order: p.order,
                    expected: p.expected,
                    salt,
                    poster,
                }))
            };
            let _ = tx.send(Done::Prepared(id, work.await)).await;
        });
        Ok(())
    }

    /// A ringer is ready: record it and commit; [`Agent::drive_ringers`] posts it later.
    pub(super) async fn prepared(
        &mut self,
        id: u64,
        ready: Result<Box<Ready>, String>,
    ) -> Result<()> {
        self.preparing = None;
        let ready = match ready {
            Ok(r) => r,
            Err(why) => {
                tracing::warn!(ringer = id, reason = %why, "ringer could not be prepared");
                return Ok(());
            }
        };
        let (poster_key, poster) = self.posters[ready.poster].clone();
        self.state.ringers.insert(
            id,
            RingerRecord {
                id,
                stage: RingerStage::Committing,
                poster_key,
                poster: poster.address.to_string(),
                expected: hex::encode(ready.expected),
                salt: hex::encode(ready.salt),
                order: serde_json::to_value(&ready.order)?,
                challenge_id: None,
                commit_height: 0,
                post_after_height: 0,
                order_id: None,
                passed: 0,
                failed: 0,
                reason: None,
                revealed_height: 0,
            },
        );
        // The salt and expected answer are on disk before the commitment leaves.
        self.save()?;
        let commitment = challenge_commitment(&poster.address, &ready.expected, &ready.salt);
        let outcome = self
            .chain
            .verify(VerifyMsg::CommitChallenge(MsgCommitChallenge {
                commitment,
            }))
            .await
            .and_then(|o| o.ok());
        match outcome {
            Ok(o) => {
                let challenge_id = o.event::<ChallengeCommittedEvent>().map(|e| e.challenge_id);
                let delay = match self.config.challenge.post_delay_max_blocks {
                    0 => 0,
                    max => OsRng.next_u64() % max,
                };
                if let Some(r) = self.state.ringers.get_mut(&id) {
                    r.stage = RingerStage::Committed;
                    r.challenge_id = challenge_id;
                    r.commit_height = o.height;
                    r.post_after_height = o.height.saturating_add(1).saturating_add(delay);
                }
                self.state.counters.challenges_committed += 1;
                tracing::info!(
                    ringer = id,
                    ?challenge_id,
                    height = o.height,
                    "challenge committed"
                );
                self.save()
            }
            Err(e) => {
                self.abandon(id, format!("commit failed: {e:#}"));
                self.save()
            }
        }
    }

    /// The poster sends the ringer order (at or after `post_after_height`).
    async fn post_ringer(&mut self, id: u64) -> Result<()> {
        let Some(r) = self.state.ringers.get_mut(&id) else {
            return Ok(());
        };
        let order: gpuchain_auction::MsgPostOrder = serde_json::from_value(r.order.clone())?;
        let Some((_, poster)) = self
            .posters
            .iter()
            .find(|(k, _)| *k == r.poster_key)
            .cloned()
        else {
            self.abandon(id, "its poster key is no longer configured".into());
            return self.save();
        };
        r.stage = RingerStage::Posting;
        self.save()?;
        let outcome = poster
            .submit_with_memo(Msg::Auction(AuctionMsg::PostOrder(order)), "")
            .await
            .and_then(|o| o.ok());
        match outcome {
            Ok(o) => {
                let order_id = o.event::<OrderPostedEvent>().map(|e| e.order_id);
                if let Some(r) = self.state.ringers.get_mut(&id) {
                    r.stage = RingerStage::Posted;
                    r.order_id = order_id;
                }
                tracing::info!(
                    ringer = id,
                    ?order_id,
                    height = o.height,
                    "ringer order posted"
                );
            }
            Err(e) => self.abandon(id, format!("posting the order failed: {e:#}")),
        }
        self.save()
    }

    fn abandon(&mut self, id: u64, why: String) {
        if let Some(r) = self.state.ringers.get_mut(&id) {
            tracing::warn!(ringer = id, reason = %why, "ringer abandoned");
            r.stage = RingerStage::Abandoned;
            r.reason = Some(why);
            self.state.counters.challenges_abandoned += 1;
        }
    }

    /// Every open ringer: post a committed one, reveal one whose leases are all judged,
    /// give up on one that expired or never cleared.
    pub(super) async fn drive_ringers(&mut self) -> Result<()> {
        let ttl = self.params.challenge_ttl_blocks;
        let open: Vec<RingerRecord> = self
            .state
            .ringers
            .values()
            .filter(|r| !r.is_final())
            .cloned()
            .collect();
        for r in open {
            if r.commit_height > 0 && self.height > r.commit_height.saturating_add(ttl) {
                self.abandon(r.id, "the challenge expired".into());
                continue;
            }
            match (r.stage, r.order_id) {
                (RingerStage::Committed, _) if self.height >= r.post_after_height => {
                    self.post_ringer(r.id).await?
                }
                (RingerStage::Posted, Some(order_id)) => self.maybe_reveal(&r, order_id).await?,
                _ => {}
            }
        }
        Ok(())
    }

    async fn maybe_reveal(&mut self, r: &RingerRecord, order_id: u64) -> Result<()> {
        let Some(order) = self.chain.order(order_id).await? else {
            return Ok(());
        };
        if matches!(order.state, OrderState::Cancelled | OrderState::Expired) {
            self.abandon(r.id, format!("order {order_id} never cleared"));
            return Ok(());
        }
        let leases = self.chain.leases_of_order(order_id).await?;
        let unjudged = leases.iter().any(|l| l.state.is_unjudged());
        if leases.is_empty() || unjudged {
            return Ok(());
        }
        let Some(challenge_id) = r.challenge_id else {
            self.abandon(r.id, "no challenge id was recorded".into());
            return Ok(());
        };
        let expected = hash32(&r.expected);
        if let Some(honest) = self.honest_difference(&order.job, &leases, &expected).await {
            self.abandon(r.id, honest);
            return Ok(());
        }
        let msg = MsgRevealChallenge {
            challenge_id,
            order_id,
            expected_output_hash: hash32(&r.expected),
            salt: hash32(&r.salt),
        };
        match self
            .chain
            .verify(VerifyMsg::RevealChallenge(msg))
            .await
            .and_then(|o| o.ok())
        {
            Ok(o) => {
                let (passed, failed) = o
                    .event::<ChallengeRevealedEvent>()
                    .map_or((0, 0), |e| (e.passed, e.failed));
                self.state.counters.challenges_revealed += 1;
                self.state.counters.challenge_leases_passed += u64::from(passed);
                self.state.counters.challenge_leases_failed += u64::from(failed);
                if let Some(rec) = self.state.ringers.get_mut(&r.id) {
                    rec.stage = RingerStage::Revealed;
                    rec.passed = passed;
                    rec.failed = failed;
                    rec.revealed_height = o.height;
                }
                tracing::info!(
                    ringer = r.id,
                    challenge_id,
                    order_id,
                    passed,
                    failed,
                    "challenge revealed"
                );
            }
            Err(e) => self.abandon(r.id, format!("reveal failed: {e:#}")),
        }
        Ok(())
    }

    /// Why revealing would fault an honest result: a lease of the ringer order whose bytes
    /// differ from the expected answer but lie within the job's tolerance of it (another
    /// backend). The reveal faults every other hash, and the provider's appeal would cost
    /// this verifier its bond. `None` when every other result is really wrong (beyond
    /// tolerance, unfetchable, or not its revealed bytes) or the expected output is gone
    /// (then the reveal goes ahead on the hash alone).
    async fn honest_difference(
        &self,
        job: &JobSpec,
        leases: &[Lease],
        expected: &[u8; 32],
    ) -> Option<String> {
        let ours = std::fs::read(self.fetcher.store().path(&BlobHash(*expected))).ok()?;
        for lease in leases {
            let Some(theirs) = lease.result_hash else {
                continue;
            };
            if theirs == *expected || !lease.state.takes_verdict() {
                continue;
            }
            let Ok(Some(provider)) = self.chain.provider(&lease.provider).await else {
                continue;
            };
            let endpoint = provider.attrs.endpoint_url;
            let Ok(bytes) = fetch_output(&self.http, &endpoint, &theirs, &self.limits).await else {
                continue;
            };
            let within =
                compare(job.kind(), &job.tolerance(), &bytes, &ours).is_ok_and(|v| v.accepted());
            if within {
                return Some(format!(
                    "lease {}: an honest result on another backend (within tolerance); not revealed",
                    lease.id
                ));
            }
        }
        None
    }

    /// After a restart: a commitment or order that was being sent is looked up on chain and
    /// adopted, or the ringer is given up (never sent twice).
    pub(super) async fn reconcile_ringers(&mut self) -> Result<()> {
        let me = self.chain.address;
        let pending: Vec<RingerRecord> = self
            .state
            .ringers
            .values()
            .filter(|r| matches!(r.stage, RingerStage::Committing | RingerStage::Posting))
            .cloned()
            .collect();
        for r in pending {
            if r.stage == RingerStage::Committing {
                let poster: gpuchain_types::Address =
                    r.poster.parse().map_err(|e| anyhow::anyhow!("{e:?}"))?;
                let commitment =
                    challenge_commitment(&poster, &hash32(&r.expected), &hash32(&r.salt));
                let found = self
                    .chain
                    .challenges()
                    .await?
                    .into_iter()
                    .find(|c| c.verifier == me && c.commitment == commitment);
                match found {
                    Some(c) => {
                        tracing::info!(
                            ringer = r.id,
                            challenge_id = c.id,
                            "commitment sent before the restart is on chain"
                        );
                        if let Some(rec) = self.state.ringers.get_mut(&r.id) {
                            rec.stage = RingerStage::Committed;
                            rec.challenge_id = Some(c.id);
                            rec.commit_height = c.height;
                        }
                        self.state.counters.challenges_committed += 1;
                    }
                    None => self.abandon(
                        r.id,
                        "commitment not on chain after a restart; not sending it again".into(),
                    ),
                }
            } else {
                let job: gpuchain_auction::MsgPostOrder = serde_json::from_value(r.order.clone())?;
                let found = self.chain.orders().await?.into_iter().find(|o| {
                    o.client.to_string() == r.poster
                        && o.created_height > r.commit_height
                        && o.job == job.job
                });
                match found {
                    Some(o) => {
                        tracing::info!(
                            ringer = r.id,
                            order_id = o.id,
                            "ringer order sent before the restart is on chain"
                        );
                        if let Some(rec) = self.state.ringers.get_mut(&r.id) {
                            rec.stage = RingerStage::Posted;
                            rec.order_id = Some(o.id);
                        }
                    }
                    None => self.abandon(
                        r.id,
                        "ringer order not on chain after a restart; not sending it again".into(),
                    ),
                }
            }
        }
        Ok(())
    }
}
