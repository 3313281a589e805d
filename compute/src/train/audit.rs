//! Auditing one (round, worker) segment of a training transcript: re-run the worker's round
//! from its checkpoint and the round's weights, compare the update with the one it sent,
//! and check that the update lowers the loss on the worker's own batches.
//!
//! The auditor needs the round's weights (checked against the transcript's weights hash),
//! the worker's checkpoint taken before that round (workers publish one per round they
//! may be audited on) and the update message the coordinator received (checked against the
//! transcript's update hash).

use gpuchain_jobspec::TrainingSpec;
use serde::Serialize;

use super::compress::UpdateMessage;
use super::coordinator::{weights_hash, RoundRecord};
use super::grad::GradFn;
use super::task::Examples;
use super::worker::{step_batch, Worker};
use crate::compare::rel_l2_ppm;
use crate::params::Params;
use crate::{Error, Result};

/// What an audit found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AuditReport {
    /// The re-run produced a byte-identical update message.
    pub identical: bool,
    /// Relative L2 distance between the claimed and re-computed dense updates, in ppm.
    pub update_rel_l2_ppm: u64,
    /// Mean loss of the round's weights on the worker's batches.
    pub loss_before: f32,
    /// Mean loss after applying the claimed update alone (`w − update`) on the same batches.
    pub loss_after: f32,
    /// Whether the claimed update is accepted: within `max_rel_l2_ppm` of the re-run and
    /// lowering the loss.
    pub accepted: bool,
}

fn dense(m: &UpdateMessage) -> Vec<f32> {
    let mut v = vec![0.0f32; m.numel as usize];
    for (i, x) in m.indices.iter().zip(&m.values) {
        v[*i as usize] = *x;
    }
    v
}

/// Audits worker `record.update_hashes[worker]` of `record.round`.
#[allow(clippy::too_many_arguments)]
pub fn audit_segment(
    spec: &TrainingSpec,
    record: &RoundRecord,
    weights: &Params,
    worker_checkpoint: &[u8],
    shard: impl Into<Examples>,
    claimed: &[u8],
    grad: &dyn GradFn,
    max_rel_l2_ppm: u64,
) -> Result<AuditReport> {
    if weights_hash(weights) != record.weights_hash {
        return Err(Error::Training(format!(
            "weights do not match the transcript of round {}",
            record.round
        )));
    }
    let shard: Examples = shard.into();
    let mut worker = Worker::resume(worker_checkpoint, shard.clone())?;
    let index = worker.state().index;
    let want = record
        .update_hashes
        .get(index as usize)
        .ok_or_else(|| Error::Training(format!("no worker {index} in round {}", record.round)))?;
    if blake3::hash(claimed).as_bytes() != want {
        return Err(Error::Training(format!(
            "update does not match the transcript hash of worker {index}, round {}",
            record.round
        )));
    }
    let claimed_msg = UpdateMessage::decode(claimed)?;
    let rerun = worker.run_round(spec, record.round, weights, grad)?;
    let rerun_msg = UpdateMessage::decode(&rerun.bytes)?;
    let (a, b) = (dense(&claimed_msg), dense(&rerun_msg));
    let update_rel_l2_ppm = rel_l2_ppm(&a, &b);
    let mut after = weights.flatten();
    for (w, u) in after.iter_mut().zip(&a) {
        *w -= *u;
    }
    let mut moved = weights.clone();
    moved.unflatten(&after)?;
    let (mut loss_before, mut loss_after) = (0.0f32, 0.0f32);
    for step in 0..spec.local_steps {
        let batch = step_batch(spec, record.round, index, step, &shard);
        loss_before += grad.loss_and_grad(weights, &batch)?.0;
        loss_after += grad.loss_and_grad(&moved, &batch)?.0;
    }
    let n = spec.local_steps as f32;
    let (loss_before, loss_after) = (loss_before / n, loss_after / n);
    Ok(AuditReport {
        identical: rerun.bytes == claimed,
        update_rel_l2_ppm,
        loss_before,
        loss_after,
        accepted: update_rel_l2_ppm <= max_rel_l2_ppm && loss_after < loss_before,
    })
}
