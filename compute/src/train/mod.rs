//! Data-parallel training with compressed updates.
//!
//! Each round, every worker starts from the round's weights, runs `H` local SGD steps on its
//! shard and sends `w_round − w_local` (its *update*) compressed: top-k sparsification with
//! error feedback (the unsent remainder stays in a local residual), optional Deep Gradient
//! Compression momentum correction and warm-up, 32/16/8-bit values and delta-varint indices.
//! The coordinator averages the decoded updates into the next round's weights. Every round's
//! weight hash and update hashes go into a transcript whose Merkle root is the job result.

pub mod audit;
pub mod compress;
pub mod coordinator;
pub mod grad;
pub mod merkle;
pub mod remote;
pub mod worker;

mod job;

pub use audit::{audit_segment, AuditReport};
pub use compress::{density_ppm, UpdateMessage};
pub use coordinator::{
    apply_broadcast, evaluate, Coordinator, RoundRecord, TrainReport, BROADCAST,
};
pub use grad::{BurnGrad, CanonicalGrad, GradFn};
pub use job::{initial_weights, run_training, run_training_job};
pub use merkle::{merkle_proof, merkle_root, verify_proof};
pub use worker::Worker;
