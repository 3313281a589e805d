//! Paying providers on chain leases (an upstream given `lease=ID`): every request sent on a
//! lease is signed with the client's key and a fresh nonce; every answer's receipt is checked
//! against what actually arrived (the request sent, the answer's text, tokens and seed, the
//! token counts) and kept with both bodies under `--receipts DIR`; batches of kept receipts
//! are acknowledged to their provider (`POST /v1/gpuchain/acks`), which claims them on chain.
//! A receipt that does not match what arrived is never acknowledged: that answer is unpaid.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Context;
use gpuchain_agent_kit::chain::AgentChain;
use gpuchain_serving::receipt::{request_sign_bytes, AckedBatch, BatchAck, Receipt, SignedAck};
use gpuchain_serving::ServingLease;

/// How far past the acknowledged range a receipt's number may be. A provider numbers a
/// lease's answers 0, 1, 2, …, so a gap is answers that never arrived; a number billions
/// ahead is a provider's mistake or attack (`u64::MAX` would end no range), never kept.
const RECEIPTS_AHEAD_MAX: u64 = 1 << 32;

/// A receipt kept and not yet acknowledged.
struct Pending {
    receipt: Receipt,
    kept_at: Instant,
}

struct Book {
    url: String,
    /// The first request number the next batch covers.
    next_first: u64,
    pending: BTreeMap<u64, Pending>,
}

/// When a batch is acknowledged.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AckPolicy {
    /// As soon as this many receipts wait in a row.
    pub(crate) every: usize,
    /// Or when the oldest has waited this long.
    pub(crate) after: Duration,
}

/// The leases the gateway pays on.
pub(crate) struct Leases {
    chain: AgentChain,
    chain_id: String,
    dir: PathBuf,
    policy: AckPolicy,
    books: Mutex<BTreeMap<u64, Book>>,
}

impl Leases {
    /// Opens the client's key and the receipts directory; reads each lease's next request
    /// number from the chain (and from acknowledgements already given).
    pub(crate) async fn open(
        chain: AgentChain,
        dir: PathBuf,
        policy: AckPolicy,
        leases: &[(u64, String)],
    ) -> anyhow::Result<Leases> {
        std::fs::create_dir_all(&dir)?;
        let chain_id = chain.client.chain_id().await?;
        let mut books = BTreeMap::new();
        for (lease_id, url) in leases {
            books.insert(*lease_id, book(&chain, &dir, *lease_id, url).await?);
        }
        Ok(Leases {
            chain,
            chain_id,
            dir,
            policy,
            books: Mutex::new(books),
        })
    }

    /// Pays on `lease_id` too (a renewed order's lease), its provider answering at `url`.
    pub(crate) async fn add(&self, lease_id: u64, url: &str) -> anyhow::Result<()> {
        let book = book(&self.chain, &self.dir, lease_id, url).await?;
        self.books
            .lock()
            .map_err(|_| anyhow::anyhow!("receipts poisoned"))?
            .entry(lease_id)
            .or_insert(book);
        Ok(())
    }

    /// The headers that send `body` on `lease_id`.
    pub(crate) fn headers(&self, lease_id: u64, body: &[u8]) -> Vec<(&'static str, String)> {
        let mut nonce = [0u8; 16];
        rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut nonce);
        let signature =
            self.chain
                .sign(&request_sign_bytes(&self.chain_id, lease_id, &nonce, body));
        vec![
            ("x-gpuchain-lease", lease_id.to_string()),
            ("x-gpuchain-nonce", hex::encode(nonce)),
            (
                "x-gpuchain-client-key",
                hex::encode(self.chain.public_key()),
            ),
            ("x-gpuchain-signature", hex::encode(signature)),
        ]
    }

    /// Keeps `receipt` for the answer `response` to `request` on `lease_id` charged `units`,
    /// if it says exactly that.
    pub(crate) fn keep(
        &self,
        lease_id: u64,
        receipt: Receipt,
        request: &[u8],
        response: &[u8],
        units: u64,
    ) -> Result<(), String> {
        if receipt.lease_id != lease_id {
            return Err(format!("the receipt is for lease {}", receipt.lease_id));
        }
        if receipt.request_hash != *blake3::hash(request).as_bytes() {
            return Err("the receipt's request hash is not the request sent".into());
        }
        if receipt.response_hash != *blake3::hash(response).as_bytes() {
            return Err("the receipt's response hash is not the answer received".into());
        }
        if receipt.units != units {
            return Err(format!(
                "the receipt charges {} units, the answer says {units}",
                receipt.units
            ));
        }
        // Checked before anything is written: a refused receipt leaves no files, and one
        // numbered like a receipt kept before never replaces that one's evidence.
        let in_range = |books: &BTreeMap<u64, Book>| -> Result<(), String> {
            let book = books.get(&lease_id).ok_or("not a lease of this gateway")?;
            if receipt.seq < book.next_first {
                return Err(format!(
                    "receipt {} is below the acknowledged range ({})",
                    receipt.seq, book.next_first
                ));
            }
            if receipt.seq - book.next_first >= RECEIPTS_AHEAD_MAX {
                return Err(format!(
                    "receipt {} is too far past the acknowledged range ({})",
                    receipt.seq, book.next_first
                ));
            }
            if book.pending.contains_key(&receipt.seq) {
                return Err(format!("receipt {} was kept already", receipt.seq));
            }
            Ok(())
        };
        in_range(&*self.books.lock().map_err(|_| "receipts poisoned")?)?;
        let dir = self.dir.join(format!("lease-{lease_id}"));
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join(format!("{}.request", receipt.seq)), request)?;
            std::fs::write(dir.join(format!("{}.response", receipt.seq)), response)?;
            std::fs::write(
                dir.join(format!("{}.receipt.json", receipt.seq)),
                serde_json::to_vec(&receipt)?,
            )
        };
        write().map_err(|e| format!("keeping the receipt: {e}"))?;
        let mut books = self.books.lock().map_err(|_| "receipts poisoned")?;
        in_range(&books)?;
        let book = books
            .get_mut(&lease_id)
            .ok_or("not a lease of this gateway")?;
        book.pending.insert(
            receipt.seq,
            Pending {
                receipt,
                kept_at: Instant::now(),
            },
        );
        Ok(())
    }

    /// The batches due now: the run of kept receipts from each lease's next number, once it
    /// is long or old enough (or at once, when `flush`); past a missing number (an answer
    /// that never arrived) only once what follows it has waited ten times the delay.
    fn due(&self, flush: bool) -> Vec<(String, AckedBatch)> {
        let Ok(mut books) = self.books.lock() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (lease_id, book) in books.iter_mut() {
            let Some(oldest) = book.pending.values().map(|p| p.kept_at).min() else {
                continue;
            };
            let run: Vec<Receipt> = (book.next_first..)
                .zip(book.pending.iter())
                .take_while(|(expect, (seq, _))| *seq == expect)
                .map(|(_, (_, p))| p.receipt.clone())
                .collect();
            let waited = oldest.elapsed();
            let batch: Vec<Receipt> = if run.len() >= self.policy.every
                || (!run.is_empty() && (flush || waited >= self.policy.after))
            {
                run
            } else if waited >= self.policy.after * 10 {
                book.pending.values().map(|p| p.receipt.clone()).collect()
            } else {
                continue;
            };
            let Some(end) = batch.last().and_then(|r| r.seq.checked_add(1)) else {
                continue;
            };
            let Some(ack) = BatchAck::of(&self.chain_id, *lease_id, book.next_first, end, &batch)
            else {
                continue;
            };
            let signed = SignedAck {
                client_key: self.chain.public_key(),
                signature: self.chain.sign(&ack.sign_bytes()),
                ack,
            };
            let seqs = batch.iter().map(|r| r.seq).collect();
            out.push((book.url.clone(), AckedBatch { signed, seqs }));
        }
        out
    }

    /// A batch the provider accepted: its receipts leave the pending set.
    fn acknowledged(&self, batch: &AckedBatch) {
        let ack = &batch.signed.ack;
        let dir = self
            .dir
            .join(format!("lease-{}", ack.lease_id))
            .join("acks");
        let _ = std::fs::create_dir_all(&dir).and_then(|()| {
            std::fs::write(
                dir.join(format!("{:020}.json", ack.first_seq)),
                serde_json::to_vec_pretty(batch).unwrap_or_default(),
            )
        });
        if let Ok(mut books) = self.books.lock() {
            if let Some(book) = books.get_mut(&ack.lease_id) {
                book.pending.retain(|seq, _| *seq >= ack.end_seq);
                book.next_first = ack.end_seq;
            }
        }
    }

    /// Reports on chain each lease whose provider went down and is still down (once per
    /// time it went down): its provider must show it is alive or lose the lease.
    async fn report_dead(
        &self,
        upstreams: &[std::sync::Arc<crate::pool::Upstream>],
        reported: &mut BTreeMap<u64, u64>,
    ) {
        for u in upstreams {
            let Some(lease_id) = u.spec.lease else {
                continue;
            };
            let downs = u.went_down.load(std::sync::atomic::Ordering::Relaxed);
            if u.is_up() || reported.get(&lease_id).copied().unwrap_or(0) >= downs {
                continue;
            }
            reported.insert(lease_id, downs);
            let msg = gpuchain_tx::Msg::Serving(gpuchain_serving::ServingMsg::Report(
                gpuchain_serving::MsgReportUnresponsive { lease_id },
            ));
            match self.chain.submit(msg).await {
                Ok(o) if o.code == 0 => {
                    tracing::warn!(lease = lease_id, upstream = %u.spec.url, "provider reported on chain as unresponsive");
                }
                Ok(o) => {
                    tracing::warn!(lease = lease_id, code = o.code, log = %o.log, "report refused")
                }
                Err(e) => tracing::warn!(lease = lease_id, error = %e, "report not sent"),
            }
        }
    }

    /// Acknowledges due batches, and reports providers of `pool` that went down, until the
    /// process ends.
    pub(crate) async fn run(self: std::sync::Arc<Self>, pool: std::sync::Arc<crate::pool::Pool>) {
        let tick = (self.policy.after / 4).max(Duration::from_millis(100));
        let mut reported = BTreeMap::new();
        loop {
            tokio::time::sleep(tick).await;
            self.report_dead(&pool.upstreams(), &mut reported).await;
            self.send_due(&pool.http, false).await;
        }
    }

    /// Acknowledges every run of kept receipts now (when the gateway stops), so the
    /// providers can claim what they served.
    pub(crate) async fn flush(&self, http: &reqwest::Client) {
        self.send_due(http, true).await;
    }

    async fn send_due(&self, http: &reqwest::Client, flush: bool) {
        for (url, batch) in self.due(flush) {
            let sent = http
                .post(format!("{url}/v1/gpuchain/acks"))
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(serde_json::to_vec(&batch).unwrap_or_default())
                .send()
                .await;
            match sent {
                Ok(r) if r.status().is_success() => {
                    tracing::info!(
                        lease = batch.signed.ack.lease_id,
                        first = batch.signed.ack.first_seq,
                        end = batch.signed.ack.end_seq,
                        receipts = batch.seqs.len(),
                        units = %batch.signed.ack.units,
                        "batch acknowledged"
                    );
                    self.acknowledged(&batch);
                }
                Ok(r) => {
                    let status = r.status();
                    let text = r.text().await.unwrap_or_default();
                    tracing::warn!(%url, %status, %text, "the provider refused an acknowledgement");
                }
                Err(e) => tracing::warn!(%url, error = %e, "sending an acknowledgement failed"),
            }
        }
    }
}

/// The book of `lease_id`, which must be a lease of the gateway's key: its next request
/// number from the chain, or past the acknowledgements already given.
async fn book(chain: &AgentChain, dir: &Path, lease_id: u64, url: &str) -> anyhow::Result<Book> {
    let lease: ServingLease = chain
        .client
        .get(&gpuchain_serving::state_key::lease(lease_id))
        .await?
        .with_context(|| format!("lease {lease_id} does not exist"))?;
    anyhow::ensure!(
        lease.client == chain.address,
        "lease {lease_id} belongs to client {}, not to this gateway's key ({})",
        lease.client,
        chain.address
    );
    let acked = last_acked_end(dir, lease_id);
    Ok(Book {
        url: url.to_string(),
        next_first: lease.next_seq.max(acked),
        pending: BTreeMap::new(),
    })
}

/// One past the last request number acknowledged in `dir` for `lease_id`.
fn last_acked_end(dir: &std::path::Path, lease_id: u64) -> u64 {
    let acks = dir.join(format!("lease-{lease_id}")).join("acks");
    std::fs::read_dir(acks)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|b| serde_json::from_slice::<AckedBatch>(&b).ok())
        .map(|b| b.signed.ack.end_seq)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gateway paying on lease 4 with a fresh key (the node is never reached), acknowledging
    /// whatever waits at once.
    fn leases(dir: &std::path::Path) -> Leases {
        gpuchain_client::keys::Keystore::open(&dir.join("keys"))
            .unwrap()
            .create("client", None)
            .unwrap();
        let chain = AgentChain::connect("http://127.0.0.1:9", dir, "client", "test").unwrap();
        let book = Book {
            url: "http://127.0.0.1:9".into(),
            next_first: 0,
            pending: BTreeMap::new(),
        };
        Leases {
            chain,
            chain_id: "gpuchain-test".into(),
            dir: dir.join("receipts"),
            policy: AckPolicy {
                every: 16,
                after: Duration::ZERO,
            },
            books: Mutex::new(BTreeMap::from([(4, book)])),
        }
    }

    fn receipt(seq: u64) -> Receipt {
        Receipt {
            lease_id: 4,
            seq,
            request_hash: *blake3::hash(b"question").as_bytes(),
            response_hash: *blake3::hash(b"answer").as_bytes(),
            units: 3,
        }
    }

    #[test]
    fn a_receipt_numbered_past_any_range_is_refused_and_acknowledging_goes_on() {
        let dir = std::env::temp_dir().join(format!("gpuchain-gateway-{}", std::process::id()));
        let leases = leases(&dir);
        let keep = |seq| leases.keep(4, receipt(seq), b"question", b"answer", 3);
        keep(0).unwrap();
        assert!(keep(u64::MAX).unwrap_err().contains("too far past"));
        assert!(keep(RECEIPTS_AHEAD_MAX).is_err());
        assert!(keep(0).unwrap_err().contains("kept already"));
        assert!(
            !dir.join("receipts/lease-4/4294967296.request").exists(),
            "a refused receipt leaves no files"
        );
        keep(1).unwrap();
        let due = leases.due(true);
        assert_eq!(due.len(), 1);
        assert_eq!(
            due[0].1.seqs,
            vec![0, 1],
            "the refused receipts wait nowhere"
        );
        assert_eq!(due[0].1.signed.ack.end_seq, 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
