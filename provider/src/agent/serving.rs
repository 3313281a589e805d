//! Serving leases, the agent's side (the endpoint's side is `serve::ledger`): bid on serving
//! orders for the models configured under `[serving]`, claim every batch the client
//! acknowledged (in order, as the chain takes them), reveal the receipt an audit draws,
//! appeal a `faulty` verdict on what its endpoint answered, and answer a client's report with
//! a heartbeat.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use gpuchain_client::follow::FollowedBlock;
use gpuchain_serving::receipt::{merkle_proof, AckedBatch, Receipt};
use gpuchain_serving::{
    Claim, ClaimStage, MsgAppealServing, MsgBidServing, MsgRevealReceipt, MsgServingHeartbeat,
    ServingAuditEvent, ServingLeaseState, ServingMsg, ServingOrder, ServingOrderOpenedEvent,
    ServingOrderState, ServingReportEvent, ServingVerdictStandsEvent,
};
use gpuchain_tx::Msg;

use super::Agent;
use crate::config::ServingConfig;

fn lease_dir(receipts: &Path, lease_id: u64) -> PathBuf {
    receipts.join(format!("lease-{lease_id}"))
}

/// The acknowledged batches kept for a lease, by first request number.
fn acked_batches(receipts: &Path, lease_id: u64) -> Vec<AckedBatch> {
    let mut batches: Vec<AckedBatch> =
        std::fs::read_dir(lease_dir(receipts, lease_id).join("acks"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read(e.path()).ok())
            .filter_map(|b| serde_json::from_slice(&b).ok())
            .collect();
    // Of batches starting at the same request, the one paying most first (the one claimed),
    // then the shortest range.
    batches.sort_by_key(|b| {
        let ack = &b.signed.ack;
        (ack.first_seq, std::cmp::Reverse(ack.units), ack.end_seq)
    });
    batches
}

/// The acknowledged batch `claim` was made from: the same range, count, units and root.
/// A client may acknowledge a range more than once, and the reveal must prove against the
/// batch that was claimed, not another that starts at the same request.
fn batch_of_claim(batches: Vec<AckedBatch>, claim: &Claim) -> Option<AckedBatch> {
    batches.into_iter().find(|b| {
        let ack = &b.signed.ack;
        (
            ack.lease_id,
            ack.first_seq,
            ack.end_seq,
            ack.count,
            ack.units,
            ack.root,
        ) == (
            claim.lease_id,
            claim.first_seq,
            claim.end_seq,
            claim.count,
            claim.units,
            claim.root,
        )
    })
}

/// Every receipt written for a lease, by request number.
fn receipts_of(receipts: &Path, lease_id: u64) -> Vec<Receipt> {
    let log = lease_dir(receipts, lease_id).join("receipts.jsonl");
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<crate::serve::LedgerEntry>(l).ok())
        .map(|e| e.receipt)
        .collect()
}

/// Whether the serving endpoint answers `GET /v1/models`.
async fn endpoint_answers(url: &str) -> bool {
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(3))
        .build();
    match client {
        Ok(c) => c
            .get(format!("{}/v1/models", url.trim_end_matches('/')))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success()),
        Err(_) => false,
    }
}

impl Agent {
    fn serving(&self) -> Option<&ServingConfig> {
        self.config.serving.as_ref()
    }

    async fn submit_serving(&self, msg: ServingMsg, what: &str) {
        match self.chain.submit(Msg::Serving(msg)).await {
            Ok(o) if o.code == 0 => tracing::info!(what, "serving transaction committed"),
            Ok(o) => {
                tracing::warn!(what, code = o.code, log = %o.log, "serving transaction refused")
            }
            Err(e) => tracing::warn!(what, error = %e, "serving transaction not sent"),
        }
    }

    /// The serving part of one block.
    pub(super) async fn follow_serving(&mut self, block: &FollowedBlock) -> Result<()> {
        let Some(config) = self.serving().cloned() else {
            return Ok(());
        };
        let me = self.chain.address;
        for e in block.events() {
            if let Some(opened) = e.decode::<ServingOrderOpenedEvent>() {
                self.bid_serving(&config, opened.order_id).await;
            } else if let Some(audit) = e.decode::<ServingAuditEvent>() {
                if audit.provider == me {
                    self.reveal(&config, audit.claim_id, audit.lease_id).await;
                }
            } else if let Some(stands) = e.decode::<ServingVerdictStandsEvent>() {
                if stands.provider == me && !stands.honest {
                    self.appeal_serving_fault(stands.claim_id).await;
                }
            } else if let Some(report) = e.decode::<ServingReportEvent>() {
                if report.provider == me {
                    self.open_reports.insert(report.lease_id, report.deadline);
                }
            }
        }
        self.answer_reports(&config, block.height).await;
        self.claim_acknowledged(&config).await
    }

    /// A `faulty` verdict stands on one of our claims: our endpoint answered with the model
    /// it serves, so the verdict is wrong and a fresh jury is asked (the appeal deposit is
    /// lost if it agrees). Operators who would rather not risk the deposit turn
    /// `appeal_faulty_verdicts` off.
    async fn appeal_serving_fault(&self, claim_id: u64) {
        if !self.config.provider.appeal_faulty_verdicts {
            tracing::warn!(
                claim_id,
                "faulty serving verdict on our claim; not appealing"
            );
            return;
        }
        let msg = ServingMsg::Appeal(MsgAppealServing { claim_id });
        self.submit_serving(msg, "appeal of a faulty serving verdict")
            .await;
    }

    /// Answers each open report with a heartbeat as soon as the serving endpoint answers:
    /// an endpoint that restarts before the report's deadline keeps its lease. Reports
    /// past their deadline are forgotten (the chain has dropped the lease).
    async fn answer_reports(&mut self, config: &ServingConfig, height: u64) {
        // A heartbeat sent now lands in a later block: one at the deadline is too late.
        self.open_reports.retain(|_, deadline| *deadline > height);
        if self.open_reports.is_empty() {
            return;
        }
        if !endpoint_answers(&config.endpoint).await {
            tracing::warn!(
                leases = ?self.open_reports.keys().collect::<Vec<_>>(),
                "reported, and the serving endpoint does not answer: no heartbeat yet"
            );
            return;
        }
        for lease_id in std::mem::take(&mut self.open_reports).into_keys() {
            let msg = ServingMsg::Heartbeat(MsgServingHeartbeat { lease_id });
            self.submit_serving(msg, "heartbeat").await;
        }
    }

    async fn bid_serving(&self, config: &ServingConfig, order_id: u64) {
        let order: Option<ServingOrder> = self
            .chain
            .client
            .get(&gpuchain_serving::state_key::order(order_id))
            .await
            .ok()
            .flatten();
        let Some(order) = order.filter(|o| o.state == ServingOrderState::Bidding) else {
            return;
        };
        let hash = hex::encode(order.model.blake3);
        let Some(offer) = config
            .models
            .iter()
            .find(|m| m.name == order.model.name && m.blake3.eq_ignore_ascii_case(&hash))
        else {
            return;
        };
        if u128::from(offer.price) > order.max_price || order.client == self.chain.address {
            return;
        }
        let msg = ServingMsg::Bid(MsgBidServing {
            order_id,
            price: u128::from(offer.price),
            endpoint: config.endpoint.trim_end_matches('/').to_string(),
        });
        self.submit_serving(msg, "serving bid").await;
    }

    /// Claims, for every lease with acknowledged batches, the batches the chain takes next.
    async fn claim_acknowledged(&self, config: &ServingConfig) -> Result<()> {
        let Ok(dirs) = std::fs::read_dir(&config.receipts) else {
            return Ok(());
        };
        let lease_ids: Vec<u64> = dirs
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_prefix("lease-")?.parse().ok())
            .collect();
        for lease_id in lease_ids {
            let lease = self
                .chain
                .serving_lease(lease_id)
                .await
                .with_context(|| format!("reading serving lease {lease_id}"))?;
            // A lease retired from state, or ended with no claim left open, can take no claim
            // and draw no audit: its directory is moved aside (kept, not deleted) so the
            // agent's work per block stays with the leases still live.
            let finished = match &lease {
                None => true,
                Some(l) => l.state != ServingLeaseState::Serving && l.open_claims == 0,
            };
            if finished {
                let dir = lease_dir(&config.receipts, lease_id);
                let aside = config.receipts.join(format!("finished-lease-{lease_id}"));
                if let Err(e) = std::fs::rename(&dir, &aside) {
                    tracing::warn!(lease_id, error = %e, "could not move a finished lease aside");
                }
                continue;
            }
            let Some(lease) = lease.filter(|l| {
                l.provider == self.chain.address && l.state != ServingLeaseState::Closed
            }) else {
                continue;
            };
            let mut next = lease.next_seq;
            for batch in acked_batches(&config.receipts, lease_id) {
                if batch.signed.ack.first_seq != next {
                    continue;
                }
                let end = batch.signed.ack.end_seq;
                let msg = ServingMsg::Claim(batch.signed.claim());
                match self.chain.submit(Msg::Serving(msg)).await {
                    Ok(o) if o.code == 0 => {
                        tracing::info!(lease_id, first = next, end, "serving batch claimed");
                        next = end;
                    }
                    Ok(o) => {
                        tracing::warn!(lease_id, code = o.code, log = %o.log, "claim refused");
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(lease_id, error = %e, "claim not sent");
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// Reveals the receipt an audit drew from one of this provider's claims.
    async fn reveal(&self, config: &ServingConfig, claim_id: u64, lease_id: u64) {
        match self.reveal_msg(config, claim_id, lease_id).await {
            Ok(msg) => self.submit_serving(msg, "receipt reveal").await,
            Err(e) => {
                tracing::error!(claim_id, error = %format!("{e:#}"), "cannot reveal an audited receipt")
            }
        }
    }

    async fn reveal_msg(
        &self,
        config: &ServingConfig,
        claim_id: u64,
        lease_id: u64,
    ) -> Result<ServingMsg> {
        let Some(claim) = self.chain.serving_claim(claim_id).await? else {
            anyhow::bail!("the claim is gone");
        };
        let ClaimStage::AwaitingReveal { index, .. } = claim.stage else {
            anyhow::bail!("the claim waits for no reveal");
        };
        let batch = batch_of_claim(acked_batches(&config.receipts, lease_id), &claim)
            .context("no acknowledged batch is the one claimed")?;
        let all = receipts_of(&config.receipts, lease_id);
        let batch_receipts: Vec<Receipt> = batch
            .seqs
            .iter()
            .map(|s| all.iter().find(|r| r.seq == *s).cloned())
            .collect::<Option<Vec<_>>>()
            .context("a receipt of the batch is missing from receipts.jsonl")?;
        let leaves: Vec<[u8; 32]> = batch_receipts.iter().map(Receipt::leaf).collect();
        let position = usize::try_from(index)?;
        let receipt = batch_receipts
            .get(position)
            .cloned()
            .context("the drawn position is outside the batch")?;
        let bodies = lease_dir(&config.receipts, lease_id).join("bodies");
        let read = |ext: &str| {
            let path = bodies.join(format!("{}.{ext}", receipt.seq));
            std::fs::read(&path).with_context(|| format!("reading {}", path.display()))
        };
        Ok(ServingMsg::Reveal(MsgRevealReceipt {
            claim_id,
            proof: merkle_proof(&leaves, position).context("no proof")?,
            request: read("request")?,
            response: read("response")?,
            receipt,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuchain_serving::receipt::{BatchAck, SignedAck};

    fn batch(seqs: &[u64], root: u8) -> AckedBatch {
        AckedBatch {
            signed: SignedAck {
                ack: BatchAck {
                    chain_id: "gpuchain-test".into(),
                    lease_id: 4,
                    first_seq: 0,
                    end_seq: 16,
                    count: seqs.len() as u64,
                    units: 10 * seqs.len() as u128,
                    root: [root; 32],
                },
                client_key: [0; 32],
                signature: [0; 64],
            },
            seqs: seqs.to_vec(),
        }
    }

    #[test]
    fn a_second_acknowledgement_of_a_claimed_range_never_replaces_the_claimed_one() {
        let dir = tempfile::tempdir().unwrap();
        let whole = batch(&(0..16).collect::<Vec<_>>(), 1);
        crate::serve::keep_acked(&lease_dir(dir.path(), 4), &whole).unwrap();
        let claimed = whole.signed.claim();
        // After the claim, the client acknowledges the same range again with one receipt, and
        // the same receipts with another end.
        let one = batch(&[0], 2);
        crate::serve::keep_acked(&lease_dir(dir.path(), 4), &one).unwrap();
        let mut longer = whole.clone();
        longer.signed.ack.end_seq = 17;
        crate::serve::keep_acked(&lease_dir(dir.path(), 4), &longer).unwrap();
        let kept = acked_batches(dir.path(), 4);
        assert_eq!(kept.len(), 3, "all kept");
        assert_eq!(
            kept[0], whole,
            "of one range, the batch paying most is claimed"
        );
        let claim = Claim {
            id: 0,
            lease_id: claimed.lease_id,
            first_seq: claimed.first_seq,
            end_seq: claimed.end_seq,
            count: claimed.count,
            units: claimed.units,
            root: claimed.root,
            amount: 160,
            audit_reserve: 0,
            height: 9,
            stage: ClaimStage::Posted,
        };
        assert_eq!(
            batch_of_claim(kept, &claim),
            Some(whole),
            "the reveal proves against it"
        );
    }
}
