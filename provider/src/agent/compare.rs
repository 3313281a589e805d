//! Comparing replicas: when an order's replicas revealed different bytes, each provider
//! fetches the other outputs from their providers' blob servers (by the revealed hash) and
//! states whether they are within the job's tolerance of its own output, widened for two
//! replicas ([`between_replicas`]). Honest results on different backends differ only in
//! the last bits, so they settle without a dispute; a "no" disputes the order, and the
//! verifiers re-run every replica. An output that cannot be fetched is a "no". A training
//! result is a transcript root, not a comparable output: its replicas are disputed.

use std::time::Duration;

use anyhow::Result;
use gpuchain_auction::{AuctionMsg, Lease, LeaseState, MsgCompareReplicas};
use gpuchain_compute::blob::{fetch_output, hash_bytes, OutputLimits};
use gpuchain_compute::{between_replicas, compare};
use gpuchain_jobspec::{BlobHash, JobSpec};

use super::leases::MAX_TX_FAILURES;
use super::Agent;
use crate::dishonest::Dishonest;

/// One peer output's fetch, connection to last byte: a slow peer must not stall the agent.
const PEER_FETCH_TIMEOUT: Duration = Duration::from_secs(20);

impl Agent {
    /// States, once, whether the other revealed replicas of `lease`'s order match ours.
    pub(super) async fn compare_replicas(&mut self, lease: &Lease) -> Result<()> {
        let Some(rec) = self.state.leases.get(&lease.id) else {
            return Ok(());
        };
        if rec.compared_height.is_some() || rec.tx_failures >= MAX_TX_FAILURES {
            return Ok(());
        }
        let mine = rec
            .result_hash
            .as_deref()
            .and_then(|h| hex::decode(h).ok())
            .and_then(|b| <[u8; 32]>::try_from(b).ok());
        let (consistent, why) = match (self.options.dishonest, mine) {
            (Some(Dishonest::Deny), _) => (false, "test mode: denies every output".to_string()),
            // A cheater's best answer: agreement, hoping the audit draw passes it by.
            (Some(_), _) => (true, "test mode: claims agreement".to_string()),
            (None, None) => (false, "our result hash is lost".to_string()),
            (None, Some(mine)) => match self.peers_match(lease, &mine).await {
                Ok(()) => (true, "every other output is within tolerance".to_string()),
                Err(why) => (false, why),
            },
        };
        let msg = AuctionMsg::CompareReplicas(MsgCompareReplicas {
            lease_id: lease.id,
            consistent,
        });
        let outcome = self.chain.auction(msg).await.and_then(|o| o.ok());
        let Some(rec) = self.state.leases.get_mut(&lease.id) else {
            return Ok(());
        };
        match outcome {
            Ok(o) => {
                rec.compared_height = Some(o.height);
                tracing::info!(lease_id = lease.id, consistent, %why, "replicas compared");
            }
            Err(e) => {
                rec.tx_failures += 1;
                tracing::warn!(lease_id = lease.id, error = %format!("{e:#}"),
                    "stating the comparison failed");
            }
        }
        self.save()
    }

    /// `Ok` when every other comparing replica's output is within tolerance of ours;
    /// `Err` says which is not, or why it could not be checked.
    async fn peers_match(&self, lease: &Lease, mine: &[u8; 32]) -> Result<(), String> {
        let err = |e: anyhow::Error| format!("{e:#}");
        let order = self
            .chain
            .order(lease.order_id)
            .await
            .map_err(err)?
            .ok_or("the order is gone")?;
        if matches!(order.job, JobSpec::Training(_)) {
            return Err("training transcripts are judged by re-execution".into());
        }
        let path = self.fetcher.store().path(&BlobHash(*mine));
        let ours = tokio::fs::read(&path)
            .await
            .map_err(|e| format!("reading our output {}: {e}", path.display()))?;
        if hash_bytes(&ours).0 != *mine {
            return Err("our stored output no longer hashes to our result".into());
        }
        let tolerance = between_replicas(&order.job.tolerance());
        let http = self
            .fetcher
            .policy()
            .http_client()
            .map_err(|e| format!("http client: {e}"))?;
        let limits = OutputLimits {
            fetch_timeout: PEER_FETCH_TIMEOUT,
            max_output_bytes: self.config.capacity.max_blob_bytes,
            policy: self.fetcher.policy(),
        };
        let leases = self
            .chain
            .leases_of_order(lease.order_id)
            .await
            .map_err(err)?;
        for other in leases {
            let Some(theirs) = other.result_hash else {
                continue;
            };
            if other.id == lease.id || other.state != LeaseState::Comparing || theirs == *mine {
                continue;
            }
            let provider = self
                .chain
                .provider(&other.provider)
                .await
                .map_err(err)?
                .ok_or_else(|| format!("lease {}: its provider is not registered", other.id))?;
            let bytes = fetch_output(&http, &provider.attrs.endpoint_url, &theirs, &limits)
                .await
                .map_err(|e| format!("lease {}: {e}", other.id))?;
            let verdict = compare(order.job.kind(), &tolerance, &bytes, &ours)
                .map_err(|e| format!("lease {}: comparing: {e}", other.id))?;
            if !verdict.accepted() {
                return Err(format!("lease {}: {verdict:?}", other.id));
            }
        }
        Ok(())
    }
}
