//! Messages between the training coordinator and its workers.

use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_jobspec::BlobRef;
use serde::{Deserialize, Serialize};

use crate::train::RoundRecord;

/// `GET /train/status`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundStatus {
    /// The round being collected (equals `rounds` when training is over).
    pub round: u32,
    /// Rounds in the job.
    pub rounds: u32,
    /// Workers (k).
    pub workers: u32,
    /// Weights the round starts from (safetensors), served at `/blob/<hash>`.
    pub weights: BlobRef,
    /// The previous round's broadcast (`GCU1`, f32 sums; absent before round 1), served at
    /// `/blob/<hash>`: a worker holding the previous round's weights applies it instead of
    /// downloading `weights`, and checks the result against `weights`' hash.
    #[serde(default)]
    pub broadcast: Option<BlobRef>,
    /// Workers whose update for `round` is already in.
    pub submitted: Vec<u32>,
    /// Hex transcript root, once every round is done.
    pub transcript_root: Option<String>,
}

impl RoundStatus {
    /// Whether every round is done.
    pub fn done(&self) -> bool {
        self.round >= self.rounds
    }
}

/// `POST /train/submit` body (borsh).
#[derive(Clone, Debug, PartialEq, BorshSerialize, BorshDeserialize)]
pub struct Submission {
    /// Worker index.
    pub worker: u32,
    /// Round the update is for.
    pub round: u32,
    /// The encoded [`crate::train::UpdateMessage`].
    pub update: Vec<u8>,
    /// The worker's checkpoint from before this round (what a training audit re-runs from).
    pub checkpoint: Vec<u8>,
    /// Mean local minibatch loss, as `f32::to_bits` (progress only).
    pub mean_loss_bits: u32,
}

/// What one round achieved, for progress displays and the demo's summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundProgress {
    /// Round number.
    pub round: u32,
    /// Mean local loss over the workers.
    pub mean_loss: f32,
    /// Test-set accuracy of the weights after the round.
    pub test_accuracy: f64,
    /// Encoded update bytes received this round, all workers together.
    pub bytes_sent: u64,
    /// The round's broadcast, sent to each worker.
    #[serde(default)]
    pub broadcast_bytes: u64,
    /// What dense f32 updates would have been, all workers together.
    pub dense_bytes: u64,
}

impl std::fmt::Display for RoundProgress {
    /// One line of progress: loss, held-out accuracy, and bytes both ways against dense.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "round {:>3}: loss {:.4}  test accuracy {:>5.1}%  sent {} B up, {} B down to each \
             worker, vs {} B dense up ({:.0}× less up)",
            self.round,
            self.mean_loss,
            self.test_accuracy * 100.0,
            self.bytes_sent,
            self.broadcast_bytes,
            self.dense_bytes,
            self.dense_bytes as f64 / self.bytes_sent.max(1) as f64
        )
    }
}

/// `GET /train/transcript`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    /// Every finished round's record.
    pub records: Vec<RoundRecordJson>,
    /// Checkpoint blob of (round, worker), for training audits.
    pub checkpoints: Vec<(u32, u32, BlobRef)>,
    /// Update blob of (round, worker), for training audits.
    pub updates: Vec<(u32, u32, BlobRef)>,
    /// Progress of each finished round.
    pub progress: Vec<RoundProgress>,
    /// Test accuracy of the weights training started from.
    #[serde(default)]
    pub initial_accuracy: f64,
}

/// A [`RoundRecord`] with hex hashes, as sent over JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundRecordJson {
    /// Round number.
    pub round: u32,
    /// Hex blake3 of the weights the round started from.
    pub weights_hash: String,
    /// Hex blake3 of each worker's encoded update.
    pub update_hashes: Vec<String>,
    /// Encoded update size of each worker.
    pub update_bytes: Vec<u64>,
    /// Hex blake3 of the round's broadcast.
    pub broadcast_hash: String,
    /// Size of the round's broadcast.
    pub broadcast_bytes: u64,
}

impl From<&RoundRecord> for RoundRecordJson {
    fn from(r: &RoundRecord) -> Self {
        Self {
            round: r.round,
            weights_hash: hex::encode(r.weights_hash),
            update_hashes: r.update_hashes.iter().map(hex::encode).collect(),
            update_bytes: r.update_bytes.clone(),
            broadcast_hash: hex::encode(r.broadcast_hash),
            broadcast_bytes: r.broadcast_bytes,
        }
    }
}

fn hash32(text: &str) -> Option<[u8; 32]> {
    hex::decode(text).ok()?.try_into().ok()
}

impl RoundRecordJson {
    /// Back to a [`RoundRecord`]; `None` when a hash is malformed.
    pub fn to_record(&self) -> Option<RoundRecord> {
        Some(RoundRecord {
            round: self.round,
            weights_hash: hash32(&self.weights_hash)?,
            update_hashes: self
                .update_hashes
                .iter()
                .map(|h| hash32(h))
                .collect::<Option<_>>()?,
            update_bytes: self.update_bytes.clone(),
            broadcast_hash: hash32(&self.broadcast_hash)?,
            broadcast_bytes: self.broadcast_bytes,
        })
    }
}
