//! Receipts of the requests served on chain leases (`serve-model --receipts DIR --node URL
//! --operator ADDRESS`). A request carrying `x-gpuchain-lease` is answered only when it is
//! signed by that lease's client (checked on chain) with a nonce not used before; its answer
//! gets the lease's next request number and a [`Receipt`], written with both bodies under
//! `DIR/lease-<id>/` before the receipt is sent. The client's gateway posts signed
//! acknowledgements of batches to `POST /v1/gpuchain/acks`; each is checked against these
//! receipts and kept in `DIR/lease-<id>/acks/`, where the provider agent finds what to claim
//! and what to reveal when a claim is audited.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use gpuchain_client::ChainClient;
use gpuchain_serving::receipt::{request_signed_by, AckedBatch, BatchAck, Receipt};
use gpuchain_serving::{ServingKind, ServingLease, ServingLeaseState, ServingParams};
use gpuchain_types::Address;

/// How long a lease read from the chain is trusted before it is read again.
const LEASE_TTL: Duration = Duration::from_secs(5);

/// A request admitted on a lease.
pub(crate) struct Admitted {
    pub(crate) lease_id: u64,
    nonce: [u8; 16],
}

struct Book {
    lease: ServingLease,
    read_at: Instant,
    next_seq: u64,
    receipts: BTreeMap<u64, Receipt>,
    nonces: BTreeSet<[u8; 16]>,
}

/// The receipts of every lease this endpoint serves.
pub(crate) struct Ledger {
    dir: PathBuf,
    chain: ChainClient,
    chain_id: String,
    operator: Address,
    /// The chain's `max_reveal_bytes`.
    max_reveal: u64,
    books: Mutex<BTreeMap<u64, Book>>,
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn hex_array<const N: usize>(text: Option<&str>, name: &str) -> Result<[u8; N], String> {
    text.and_then(|t| hex::decode(t).ok())
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| format!("`{name}` must be {} hex digits", N * 2))
}

/// The lease id a request names, if any.
pub(crate) fn lease_of(headers: &HeaderMap) -> Option<&str> {
    header(headers, "x-gpuchain-lease")
}

impl Ledger {
    /// Opens `dir` (created if missing) and reloads every lease's receipts from it.
    pub(crate) async fn open(dir: &Path, node: &str, operator: Address) -> anyhow::Result<Ledger> {
        std::fs::create_dir_all(dir)?;
        let chain = ChainClient::new(node)?;
        let chain_id = chain.chain_id().await?;
        let params: ServingParams = chain
            .get(gpuchain_serving::state_key::params())
            .await?
            .unwrap_or_default();
        Ok(Ledger {
            dir: dir.to_path_buf(),
            chain,
            chain_id,
            operator,
            max_reveal: params.max_reveal_bytes,
            books: Mutex::new(BTreeMap::new()),
        })
    }

    /// Whether an answer of at most `answer_bytes` to a `request_bytes` request could be
    /// revealed on chain if audited; the error is a 413 answer's message. An honest provider
    /// answers nothing it could not reveal: a withheld reveal is slashed as a wrong result.
    pub(crate) fn fits(&self, request_bytes: usize, answer_bytes: usize) -> Result<(), String> {
        let total = request_bytes.saturating_add(answer_bytes) as u64;
        if total > self.max_reveal {
            return Err(format!(
                "a request of {request_bytes} bytes with an answer of up to {answer_bytes} bytes \
                 is too large to serve on a lease: an audit reveals both on chain, at most {} \
                 bytes (send a shorter request, a smaller max_tokens or fewer inputs)",
                self.max_reveal
            ));
        }
        Ok(())
    }

    fn lease_dir(&self, lease_id: u64) -> PathBuf {
        self.dir.join(format!("lease-{lease_id}"))
    }

    /// The receipts already written for a lease.
    fn reload(&self, lease_id: u64) -> (u64, BTreeMap<u64, Receipt>, BTreeSet<[u8; 16]>) {
        let mut receipts = BTreeMap::new();
        let mut nonces = BTreeSet::new();
        let path = self.lease_dir(lease_id).join("receipts.jsonl");
        for line in std::fs::read_to_string(path).unwrap_or_default().lines() {
            if let Ok(entry) = serde_json::from_str::<Entry>(line) {
                nonces.insert(entry.nonce);
                receipts.insert(entry.receipt.seq, entry.receipt);
            }
        }
        let next = receipts.keys().next_back().map_or(0, |s| s + 1);
        (next, receipts, nonces)
    }

    /// The lease as the chain has it now (cached for a few seconds).
    async fn lease(&self, lease_id: u64) -> Result<ServingLease, String> {
        let cached = {
            let books = self.books.lock().map_err(|_| "ledger poisoned")?;
            books
                .get(&lease_id)
                .filter(|b| b.read_at.elapsed() < LEASE_TTL)
                .map(|b| b.lease.clone())
        };
        if let Some(lease) = cached {
            return Ok(lease);
        }
        let lease: ServingLease = self
            .chain
            .get(&gpuchain_serving::state_key::lease(lease_id))
            .await
            .map_err(|e| format!("reading lease {lease_id}: {e:#}"))?
            .ok_or_else(|| format!("lease {lease_id} does not exist"))?;
        let mut books = self.books.lock().map_err(|_| "ledger poisoned")?;
        match books.get_mut(&lease_id) {
            Some(book) => {
                book.lease = lease.clone();
                book.read_at = Instant::now();
            }
            None => {
                let (next_seq, receipts, nonces) = self.reload(lease_id);
                books.insert(
                    lease_id,
                    Book {
                        lease: lease.clone(),
                        read_at: Instant::now(),
                        next_seq,
                        receipts,
                        nonces,
                    },
                );
            }
        }
        Ok(lease)
    }

    /// Admits a request for `model` (of `kind`) on the lease it names: signed by the lease's
    /// client, a fresh nonce, a lease of this provider that still serves and serves that
    /// model (a lease's price is per its kind's unit: an embeddings request on a generation
    /// lease would be paid per token for inputs). The error is a 4xx answer's message.
    pub(crate) async fn admit(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        model: &str,
        kind: ServingKind,
    ) -> Result<Admitted, String> {
        let lease_id: u64 = lease_of(headers)
            .and_then(|l| l.parse().ok())
            .ok_or("`x-gpuchain-lease` must be a lease id")?;
        let nonce: [u8; 16] = hex_array(header(headers, "x-gpuchain-nonce"), "x-gpuchain-nonce")?;
        let key: [u8; 32] = hex_array(
            header(headers, "x-gpuchain-client-key"),
            "x-gpuchain-client-key",
        )?;
        let signature: [u8; 64] = hex_array(
            header(headers, "x-gpuchain-signature"),
            "x-gpuchain-signature",
        )?;
        if !request_signed_by(&key, &signature, (&self.chain_id, lease_id), &nonce, body) {
            return Err("the request's signature does not verify".into());
        }
        let lease = self.lease(lease_id).await?;
        if lease.provider != self.operator {
            return Err(format!("lease {lease_id} is not this provider's"));
        }
        if lease.client != Address::from_public_key(&key) {
            return Err(format!(
                "the request is not signed by lease {lease_id}'s client"
            ));
        }
        if lease.state != ServingLeaseState::Serving {
            return Err(format!("lease {lease_id} no longer serves"));
        }
        if lease.model.name != model || lease.model.kind != kind {
            return Err(format!(
                "lease {lease_id} serves {} model `{}`, not {} model `{model}`",
                lease.model.kind.name(),
                lease.model.name,
                kind.name()
            ));
        }
        let mut books = self.books.lock().map_err(|_| "ledger poisoned")?;
        let book = books.get_mut(&lease_id).ok_or("lease not loaded")?;
        if !book.nonces.insert(nonce) {
            return Err("this request was already answered (nonce used)".into());
        }
        Ok(Admitted { lease_id, nonce })
    }

    /// Writes the receipt of an answered request and its bodies; returns the receipt.
    pub(crate) fn record(
        &self,
        admitted: &Admitted,
        request: &[u8],
        response: &[u8],
        units: u64,
    ) -> Result<Receipt, String> {
        let nonce = admitted.nonce;
        let mut books = self.books.lock().map_err(|_| "ledger poisoned")?;
        let book = books
            .get_mut(&admitted.lease_id)
            .ok_or("lease not loaded")?;
        let receipt = Receipt {
            lease_id: admitted.lease_id,
            seq: book.next_seq,
            request_hash: *blake3::hash(request).as_bytes(),
            response_hash: *blake3::hash(response).as_bytes(),
            units,
        };
        let dir = self.lease_dir(admitted.lease_id);
        let bodies = dir.join("bodies");
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(&bodies)?;
            std::fs::write(bodies.join(format!("{}.request", receipt.seq)), request)?;
            std::fs::write(bodies.join(format!("{}.response", receipt.seq)), response)?;
            let mut log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("receipts.jsonl"))?;
            let line = serde_json::to_string(&Entry {
                receipt: receipt.clone(),
                nonce,
            })?;
            writeln!(log, "{line}")?;
            log.sync_data()
        };
        write().map_err(|e| format!("writing the receipt: {e}"))?;
        book.next_seq += 1;
        book.receipts.insert(receipt.seq, receipt.clone());
        Ok(receipt)
    }

    /// Checks an acknowledged batch against the receipts and keeps it for the agent.
    pub(crate) async fn accept(&self, batch: AckedBatch) -> Result<(), String> {
        let ack = &batch.signed.ack;
        if ack.chain_id != self.chain_id {
            return Err(format!("the acknowledgement is for chain {}", ack.chain_id));
        }
        let lease = self.lease(ack.lease_id).await?;
        if !ack.is_signed_by(
            &lease.client,
            &batch.signed.client_key,
            &batch.signed.signature,
        ) {
            return Err("the acknowledgement is not signed by the lease's client".into());
        }
        let receipts: Vec<Receipt> = {
            let books = self.books.lock().map_err(|_| "ledger poisoned")?;
            let book = books.get(&ack.lease_id).ok_or("lease not loaded")?;
            batch
                .seqs
                .iter()
                .map(|s| book.receipts.get(s).cloned())
                .collect::<Option<Vec<_>>>()
                .ok_or("the batch names a receipt this provider never wrote")?
        };
        let expected = BatchAck::of(
            &self.chain_id,
            ack.lease_id,
            ack.first_seq,
            ack.end_seq,
            &receipts,
        )
        .ok_or("the batch's receipts are not in order inside its range")?;
        if &expected != ack {
            return Err("the acknowledgement does not match this provider's receipts".into());
        }
        keep_acked(&self.lease_dir(ack.lease_id), &batch)
    }
}

/// Keeps a checked acknowledged batch in its lease's directory for the agent, named by its
/// first request and the hash of everything the client signed (range, count, units, root):
/// another acknowledgement of the same range (a retry with more receipts, or one sent after
/// the claim so that its reveal would fail, with other receipts or another end) is kept
/// beside the first, never over it, and a file once written is never rewritten.
pub(crate) fn keep_acked(lease_dir: &Path, batch: &AckedBatch) -> Result<(), String> {
    let ack = &batch.signed.ack;
    let dir = lease_dir.join("acks");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let signed = blake3::hash(&ack.sign_bytes());
    let file = dir.join(format!("{:020}-{}.json", ack.first_seq, signed.to_hex()));
    if file.exists() {
        return Ok(());
    }
    let bytes = serde_json::to_vec_pretty(batch).map_err(|e| e.to_string())?;
    std::fs::write(file, bytes).map_err(|e| format!("keeping the acknowledgement: {e}"))
}

/// One line of `receipts.jsonl`.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Entry {
    pub(crate) receipt: Receipt,
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub(crate) nonce: [u8; 16],
}
