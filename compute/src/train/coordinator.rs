//! The coordinator: averages decoded updates into the next round's weights and keeps the
//! transcript.

use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_jobspec::{TrainingSpec, ValueBits};
use serde::Serialize;

use super::compress::UpdateMessage;
use super::merkle::merkle_root;
use crate::digits::Digits;
use crate::params::Params;
use crate::{canonical, Error, Result};

/// One round of the transcript.
#[derive(Clone, Debug, PartialEq, Serialize, BorshSerialize, BorshDeserialize)]
pub struct RoundRecord {
    /// Round number.
    pub round: u32,
    /// blake3 of the weights the round started from (f32 LE, name order).
    #[serde(with = "hex_array")]
    pub weights_hash: [u8; 32],
    /// blake3 of each worker's encoded update, by worker index.
    pub update_hashes: Vec<[u8; 32]>,
    /// Encoded update size of each worker, in bytes.
    pub update_bytes: Vec<u64>,
    /// blake3 of the round's broadcast: the summed updates every worker applies to the
    /// round's weights to get the next round's ([`Coordinator::broadcast`]).
    #[serde(with = "hex_array")]
    pub broadcast_hash: [u8; 32],
    /// Size of the broadcast, in bytes.
    pub broadcast_bytes: u64,
}

mod hex_array {
    pub(super) fn serialize<S: serde::Serializer>(b: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(b))
    }
}

impl RoundRecord {
    /// The transcript leaf: `blake3("gpuchain.train.round" ‖ round ‖ weights_hash ‖ update
    /// hashes… ‖ broadcast_hash)`.
    pub fn leaf(&self) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        h.update(b"gpuchain.train.round");
        h.update(&self.round.to_le_bytes());
        h.update(&self.weights_hash);
        for u in &self.update_hashes {
            h.update(u);
        }
        h.update(&self.broadcast_hash);
        *h.finalize().as_bytes()
    }
}

/// blake3 of weights as f32 little-endian values in name order.
pub fn weights_hash(p: &Params) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    for v in p.flatten() {
        h.update(&v.to_le_bytes());
    }
    *h.finalize().as_bytes()
}

/// Coordinator state; [`Coordinator::checkpoint`] saves all of it.
#[derive(Clone, Debug, PartialEq, BorshSerialize, BorshDeserialize)]
pub struct Coordinator {
    workers: u32,
    round: u32,
    names: Vec<(String, Vec<usize>)>,
    flat: Vec<f32>,
    records: Vec<RoundRecord>,
    broadcast: Vec<u8>,
}

impl Coordinator {
    /// Starts at round 0 with `init` weights.
    pub fn new(spec: &TrainingSpec, init: &Params) -> Self {
        Self {
            workers: spec.workers,
            round: 0,
            names: init
                .tensors
                .iter()
                .map(|(n, t)| (n.clone(), t.dims.clone()))
                .collect(),
            flat: init.flatten(),
            records: Vec::new(),
            broadcast: Vec::new(),
        }
    }

    /// Workers per round (k).
    pub fn workers(&self) -> u32 {
        self.workers
    }

    /// The next round to run.
    pub fn round(&self) -> u32 {
        self.round
    }

    /// The current weights.
    pub fn weights(&self) -> Params {
        let mut p = Params::default();
        let mut at = 0;
        for (name, dims) in &self.names {
            let n: usize = dims.iter().product();
            p.insert(name.clone(), dims.clone(), self.flat[at..at + n].to_vec());
            at += n;
        }
        p
    }

    /// The transcript so far.
    pub fn records(&self) -> &[RoundRecord] {
        &self.records
    }

    /// Averages one round's encoded updates (one per worker, any order) into the weights:
    /// `w ← w − (1/k) Σ_worker update`, summed in worker order per entry.
    pub fn apply_round(&mut self, messages: &[Vec<u8>]) -> Result<()> {
        let k = self.workers as usize;
        let mut by_worker: Vec<Option<(UpdateMessage, &Vec<u8>)>> = vec![None; k];
        for bytes in messages {
            let m = UpdateMessage::decode(bytes)?;
            if m.round != self.round || m.numel as usize != self.flat.len() {
                return Err(Error::Training(format!(
                    "update for round {} with {} entries; expected round {} with {}",
                    m.round,
                    m.numel,
                    self.round,
                    self.flat.len()
                )));
            }
            let slot = by_worker
                .get_mut(m.worker as usize)
                .ok_or_else(|| Error::Training(format!("unknown worker {}", m.worker)))?;
            if slot.is_some() {
                return Err(Error::Training(format!(
                    "two updates from worker {}",
                    m.worker
                )));
            }
            *slot = Some((m, bytes));
        }
        let mut sum = vec![0.0f32; self.flat.len()];
        let mut record = RoundRecord {
            round: self.round,
            weights_hash: weights_hash(&self.weights()),
            update_hashes: Vec::new(),
            update_bytes: Vec::new(),
            broadcast_hash: [0; 32],
            broadcast_bytes: 0,
        };
        for (w, slot) in by_worker.iter().enumerate() {
            let (m, bytes) = slot.as_ref().ok_or_else(|| {
                Error::Training(format!("no update from worker {w} in round {}", self.round))
            })?;
            for (i, v) in m.indices.iter().zip(&m.values) {
                sum[*i as usize] += *v;
            }
            record.update_hashes.push(*blake3::hash(bytes).as_bytes());
            record.update_bytes.push(bytes.len() as u64);
        }
        // Entries whose sum is +0.0 leave a weight as it is; any other (−0.0 included) is
        // sent. When most entries changed, all are sent (+0.0 where none did): a dense message
        // carries no indices.
        let changed = sum.iter().filter(|s| s.to_bits() != 0).count();
        let all = changed.saturating_mul(5) >= sum.len().saturating_mul(4);
        let (indices, values): (Vec<u32>, Vec<f32>) = (0u32..)
            .zip(&sum)
            .filter(|(_, s)| all || s.to_bits() != 0)
            .unzip();
        let broadcast = UpdateMessage {
            round: self.round,
            worker: BROADCAST,
            numel: self.flat.len() as u32,
            indices,
            values,
        };
        apply_broadcast(&mut self.flat, &broadcast, self.workers)?;
        self.broadcast = broadcast.encode(ValueBits::B32, 0.0);
        record.broadcast_hash = *blake3::hash(&self.broadcast).as_bytes();
        record.broadcast_bytes = self.broadcast.len() as u64;
        self.records.push(record);
        self.round += 1;
        Ok(())
    }

    /// The last closed round's broadcast (`GCU1`, f32 values, worker index [`BROADCAST`]):
    /// the sum of the workers' decoded updates at every entry any of them changed. A worker
    /// holding that round's weights applies it with [`apply_broadcast`] and has the next
    /// round's weights to the bit, instead of downloading them whole. Empty before the first
    /// round closes.
    pub fn broadcast(&self) -> &[u8] {
        &self.broadcast
    }

    /// Merkle root over the round leaves followed by a final leaf, the hash of the current
    /// weights.
    pub fn transcript_root(&self) -> [u8; 32] {
        let mut leaves: Vec<[u8; 32]> = self.records.iter().map(RoundRecord::leaf).collect();
        leaves.push(weights_hash(&self.weights()));
        merkle_root(&leaves)
    }

    /// Serialised state (borsh).
    pub fn checkpoint(&self) -> Vec<u8> {
        borsh::to_vec(self).unwrap_or_default()
    }

    /// Restores a checkpoint.
    pub fn resume(bytes: &[u8]) -> Result<Self> {
        Self::try_from_slice(bytes)
            .map_err(|e| Error::Training(format!("coordinator checkpoint: {e}")))
    }
}

/// The worker index a broadcast carries (no worker has it).
pub const BROADCAST: u32 = u32::MAX;

/// `w ← w − (1/k) · sum` at the broadcast's entries, exactly as the coordinator updates its
/// own weights (the same f32 operations in the same order), so both sides hold the same bits.
pub fn apply_broadcast(flat: &mut [f32], m: &UpdateMessage, workers: u32) -> Result<()> {
    if m.worker != BROADCAST || m.numel as usize != flat.len() {
        return Err(Error::Training(format!(
            "a broadcast of {} entries from sender {}; expected {} from the coordinator",
            m.numel,
            m.worker,
            flat.len()
        )));
    }
    let inv_k = 1.0 / workers.max(1) as f32;
    for (i, s) in m.indices.iter().zip(&m.values) {
        let w = flat
            .get_mut(*i as usize)
            .ok_or_else(|| Error::Training(format!("broadcast index {i} out of range")))?;
        *w -= *s * inv_k;
    }
    Ok(())
}

/// Summary of a training run.
#[derive(Clone, Debug, Serialize)]
pub struct TrainReport {
    /// Test accuracy of the final weights (fixed split), in 0..=1.
    pub test_accuracy: f64,
    /// Total bytes one worker sent, averaged over workers.
    pub bytes_per_worker: u64,
    /// What dense f32 updates would have cost per worker.
    pub dense_bytes_per_worker: u64,
    /// `dense_bytes_per_worker / bytes_per_worker`: uploads only.
    pub compression_ratio: f64,
    /// Bytes one worker received: every round's broadcast (the initial weights come from
    /// the spec's seed or the job's weights blob, fetched once either way, and are not counted).
    pub bytes_down_per_worker: u64,
    /// Both directions against dense f32 both ways (updates up, whole weights down, every
    /// round): `2 · dense_bytes_per_worker / (bytes_per_worker + bytes_down_per_worker)`.
    pub total_ratio: f64,
    /// Merkle root of the transcript.
    #[serde(with = "hex_array")]
    pub transcript_root: [u8; 32],
    /// Mean training loss of the last round.
    pub final_loss: f32,
}

/// Accuracy of the canonical MLP forward pass on a dataset.
pub fn evaluate(p: &Params, data: &Digits) -> Result<f64> {
    let logits = canonical::mlp::forward(p, &data.pixels, data.len())?;
    let correct = logits
        .chunks(10)
        .zip(&data.labels)
        .filter(|(l, y)| canonical::math::argmax(l) == usize::from(**y))
        .count();
    Ok(correct as f64 / data.len().max(1) as f64)
}
