//! Data-parallel training with compressed updates: the digits MLP from scratch, or
//! all-MiniLM-L6-v2 fine-tuned as a sentence classifier ([`classifier`]).
//!
//! Each round, every worker starts from the round's weights, runs `H` local SGD steps on its
//! shard and sends `w_round − w_local` (its *update*) compressed: top-k sparsification with
//! error feedback (the unsent remainder stays in a local residual), optional Deep Gradient
//! Compression momentum correction and warm-up, 32/16/8-bit values and delta-varint indices.
//! The coordinator averages the decoded updates into the next round's weights. Every round's
//! weight hash and update hashes go into a transcript whose Merkle root is the job result.

pub mod audit;
pub mod classifier;
pub mod compress;
pub mod coordinator;
pub mod grad;
pub mod merkle;
pub mod remote;
pub mod sentences;
pub mod task;
pub mod worker;

mod job;

pub use audit::{audit_segment, AuditReport};
pub use compress::{density_ppm, UpdateMessage};
pub use coordinator::{
    apply_broadcast, evaluate, Coordinator, RoundRecord, TrainReport, BROADCAST,
};
pub use grad::{BurnGrad, CanonicalGrad, GradFn};
pub use job::{run_task, run_task_observed, run_training, run_training_job};
pub use merkle::{merkle_proof, merkle_root, verify_proof};
pub use sentences::{Example, SentenceDataset};
pub use task::{Batch, Examples, TrainTask};
pub use worker::Worker;
