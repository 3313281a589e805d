//! One data-parallel worker: local SGD steps, then a compressed update.

use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_jobspec::TrainingSpec;

use super::compress::{density_ppm, quantize, top_k, UpdateMessage};
use super::grad::GradFn;
use super::task::{Batch, Examples};
use crate::params::Params;
use crate::{Error, Result};

/// A worker's local state. Everything in it is saved by [`Worker::checkpoint`], so a
/// replacement resumes exactly where the worker stopped.
#[derive(Clone, Debug, PartialEq, BorshSerialize, BorshDeserialize)]
pub struct WorkerState {
    /// Worker index in `0..k`.
    pub index: u32,
    /// Error-feedback residual: what was selected for no message yet.
    pub residual: Vec<f32>,
    /// Local SGD momentum buffer (kept across rounds). Because a worker's update is the
    /// displacement its momentum SGD produced, accumulating updates in the residual is DGC's
    /// *momentum correction*; with `momentum_correction` the buffer is also zeroed at the
    /// entries just sent (DGC's momentum factor masking), so stale momentum is not re-sent.
    pub sgd_velocity: Vec<f32>,
}

/// A worker with its shard.
#[derive(Clone, Debug)]
pub struct Worker {
    state: WorkerState,
    shard: Examples,
}

/// What a round produced.
#[derive(Clone, Debug)]
pub struct RoundOutput {
    /// Encoded update message.
    pub bytes: Vec<u8>,
    /// Mean minibatch loss over the local steps.
    pub mean_loss: f32,
}

/// Seed of the minibatch sampler for one local step: blake3 of the job seed, round, worker
/// and step (documented so anyone can re-derive a worker's batches).
pub fn step_seed(seed: u64, round: u32, worker: u32, step: u32) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(b"gpuchain.train.batch");
    h.update(&seed.to_le_bytes());
    h.update(&round.to_le_bytes());
    h.update(&worker.to_le_bytes());
    h.update(&step.to_le_bytes());
    let b = h.finalize();
    u64::from_le_bytes(b.as_bytes()[..8].try_into().unwrap_or([0; 8]))
}

/// The minibatch worker `worker` trains on at `step` of `round`: `batch_size` examples of
/// its shard drawn (with replacement) by a generator seeded with [`step_seed`]. Auditors
/// use it to rebuild a worker's batches.
pub fn step_batch(
    spec: &TrainingSpec,
    round: u32,
    worker: u32,
    step: u32,
    shard: &Examples,
) -> Batch {
    shard.sample(
        step_seed(spec.seed, round, worker, step),
        spec.batch_size as usize,
    )
}

impl Worker {
    /// A fresh worker for a model of `numel` values.
    pub fn new(index: u32, numel: usize, shard: impl Into<Examples>) -> Self {
        let zeros = vec![0.0; numel];
        Self {
            state: WorkerState {
                index,
                residual: zeros.clone(),
                sgd_velocity: zeros,
            },
            shard: shard.into(),
        }
    }

    /// The worker's state (for inspection and tests).
    pub fn state(&self) -> &WorkerState {
        &self.state
    }

    /// Serialised state (borsh).
    pub fn checkpoint(&self) -> Vec<u8> {
        borsh::to_vec(&self.state).unwrap_or_default()
    }

    /// A replacement worker resuming from a checkpoint.
    pub fn resume(checkpoint: &[u8], shard: impl Into<Examples>) -> Result<Self> {
        let state = WorkerState::try_from_slice(checkpoint)
            .map_err(|e| Error::Training(format!("worker checkpoint: {e}")))?;
        Ok(Self {
            state,
            shard: shard.into(),
        })
    }

    /// Runs `local_steps` SGD steps from `weights` and returns the compressed update.
    pub fn run_round(
        &mut self,
        spec: &TrainingSpec,
        round: u32,
        weights: &Params,
        grad: &dyn GradFn,
    ) -> Result<RoundOutput> {
        if self.shard.is_empty() {
            return Err(Error::Training(format!(
                "worker {} has an empty shard",
                self.state.index
            )));
        }
        let lr = spec.lr_ppm as f32 / 1e6;
        let mu = spec.momentum_ppm as f32 / 1e6;
        let mut local = weights.clone();
        let mut flat = local.flatten();
        let mut loss_sum = 0.0f32;
        for step in 0..spec.local_steps {
            let batch = step_batch(spec, round, self.state.index, step, &self.shard);
            let (loss, g) = grad.loss_and_grad(&local, &batch)?;
            loss_sum += loss;
            for i in 0..flat.len() {
                self.state.sgd_velocity[i] = mu * self.state.sgd_velocity[i] + g[i];
                flat[i] -= lr * self.state.sgd_velocity[i];
            }
            local.unflatten(&flat)?;
        }
        let start = weights.flatten();
        let s = &mut self.state;
        let mut acc = vec![0.0f32; flat.len()];
        for i in 0..flat.len() {
            let delta = start[i] - flat[i];
            acc[i] = if spec.error_feedback {
                s.residual[i] + delta
            } else {
                delta
            };
        }
        let density = u64::from(density_ppm(spec.topk_ppm, spec.warmup_rounds, round));
        let k = ((acc.len() as u64 * density).div_ceil(1_000_000)).max(1) as usize;
        let indices = top_k(&acc, k);
        let picked: Vec<f32> = indices.iter().map(|i| acc[*i as usize]).collect();
        let (values, scale) = quantize(&picked, spec.value_bits);
        if spec.error_feedback {
            for (j, i) in indices.iter().enumerate() {
                acc[*i as usize] -= values[j];
            }
            s.residual = acc;
        }
        if spec.momentum_correction {
            // Momentum factor masking.
            for i in &indices {
                s.sgd_velocity[*i as usize] = 0.0;
            }
        }
        let msg = UpdateMessage {
            round,
            worker: s.index,
            numel: start.len() as u32,
            indices,
            values,
        };
        Ok(RoundOutput {
            bytes: msg.encode(spec.value_bits, scale),
            mean_loss: loss_sum / spec.local_steps as f32,
        })
    }
}
