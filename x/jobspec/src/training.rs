//! Training job settings.

use borsh::{BorshDeserialize, BorshSerialize};
use serde::{Deserialize, Serialize};

use crate::{BlobRef, ModelArch, Tolerance};

/// How the first round's weights are made.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WeightsInit {
    /// Deterministic initialisation from a seed.
    Seed(u64),
    /// Start from given weights (safetensors).
    Blob(BlobRef),
}

/// Bits per transmitted update value.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize,
)]
pub enum ValueBits {
    /// IEEE 754 single precision.
    #[serde(rename = "32")]
    B32,
    /// IEEE 754 half precision.
    #[serde(rename = "16")]
    B16,
    /// 8-bit linear quantisation with one f32 scale per message.
    #[serde(rename = "8")]
    B8,
}

impl ValueBits {
    /// Bits per value.
    pub fn bits(self) -> u32 {
        match self {
            ValueBits::B32 => 32,
            ValueBits::B16 => 16,
            ValueBits::B8 => 8,
        }
    }
}

/// A data-parallel training job with compressed updates (top-k sparsification, error
/// feedback, optional Deep Gradient Compression momentum correction and warm-up).
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct TrainingSpec {
    /// Model architecture (only the digits MLP is trainable today).
    pub arch: ModelArch,
    /// First round's weights.
    pub init: WeightsInit,
    /// Training data (for digits: the gzipped UCI digits CSV).
    pub dataset: BlobRef,
    /// Data-parallel workers k.
    pub workers: u32,
    /// Communication rounds.
    pub rounds: u32,
    /// Local SGD steps H per round.
    pub local_steps: u32,
    /// Minibatch size per local step.
    pub batch_size: u32,
    /// Learning rate in ppm (0.05 = 50_000).
    pub lr_ppm: u32,
    /// Local SGD momentum in ppm (0 = plain SGD).
    #[serde(default)]
    pub momentum_ppm: u32,
    /// Fraction of update entries sent per round, in ppm (1% = 10_000; 1_000_000 = dense).
    pub topk_ppm: u32,
    /// Bits per transmitted value.
    pub value_bits: ValueBits,
    /// Keep the unsent remainder locally and add it to the next update.
    pub error_feedback: bool,
    /// DGC momentum correction with momentum factor masking: local momentum is zeroed at the
    /// entries each message sends (updates are always accumulated in the residual).
    #[serde(default)]
    pub momentum_correction: bool,
    /// DGC warm-up: density decays exponentially from 25 % to `topk_ppm` over these rounds.
    #[serde(default)]
    pub warmup_rounds: u32,
    /// Seed for data shuffling.
    pub seed: u64,
    /// Overrides the default training tolerance.
    #[serde(default)]
    pub tolerance: Option<Tolerance>,
    /// The client's training coordinator (`http://host:port`). With it, each of the order's
    /// k leases is one worker (worker index = the lease's rank by id among the order's
    /// leases) and the workers exchange rounds with the coordinator over HTTP; without it a
    /// provider runs every worker itself.
    #[serde(default)]
    pub coordinator_url: Option<String>,
}
