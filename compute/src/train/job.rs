//! Running a whole training job in one process (simulated workers), as the local CLI and the
//! tests do.

use gpuchain_jobspec::{JobKind, TrainingSpec, WeightsInit};

use super::coordinator::{evaluate, Coordinator, TrainReport};
use super::grad::{BurnGrad, CanonicalGrad, GradFn};
use super::worker::Worker;
use crate::blob::BlobStore;
use crate::digits::Digits;
use crate::params::Params;
use crate::{Backend, JobOutput, Result};

/// Trains the digits MLP over `spec.workers` simulated workers and returns the final
/// coordinator and a report. Worker `w`'s shard is the training rows with `i % k == w`.
pub fn run_training(
    spec: &TrainingSpec,
    data: &Digits,
    init: &Params,
    grad: &dyn GradFn,
) -> Result<(Coordinator, TrainReport)> {
    spec_check(spec)?;
    let (train, test) = data.split();
    let k = spec.workers as usize;
    let mut workers: Vec<Worker> = (0..k)
        .map(|w| Worker::new(w as u32, init.numel(), train.shard(w, k)))
        .collect();
    let mut coord = Coordinator::new(spec, init);
    let mut final_loss = 0.0;
    while coord.round() < spec.rounds {
        let weights = coord.weights();
        let mut messages = Vec::with_capacity(k);
        let mut loss = 0.0;
        for w in &mut workers {
            let out = w.run_round(spec, coord.round(), &weights, grad)?;
            loss += out.mean_loss;
            messages.push(out.bytes);
        }
        final_loss = loss / k as f32;
        coord.apply_round(&messages)?;
    }
    let sent: u64 = coord
        .records()
        .iter()
        .flat_map(|r| r.update_bytes.iter())
        .sum();
    let bytes_per_worker = sent / k as u64;
    let bytes_down_per_worker: u64 = coord.records().iter().map(|r| r.broadcast_bytes).sum();
    let dense = u64::from(spec.rounds) * init.numel() as u64 * 4;
    let report = TrainReport {
        test_accuracy: evaluate(&coord.weights(), &test)?,
        bytes_per_worker,
        dense_bytes_per_worker: dense,
        compression_ratio: dense as f64 / bytes_per_worker.max(1) as f64,
        bytes_down_per_worker,
        total_ratio: 2.0 * dense as f64 / (bytes_per_worker + bytes_down_per_worker).max(1) as f64,
        transcript_root: coord.transcript_root(),
        final_loss,
    };
    Ok((coord, report))
}

fn spec_check(spec: &TrainingSpec) -> Result<()> {
    gpuchain_jobspec::JobSpec::Training(spec.clone())
        .validate()
        .map_err(Into::into)
}

/// The initial weights a spec asks for.
pub fn initial_weights(spec: &TrainingSpec, store: &BlobStore) -> Result<Params> {
    match &spec.init {
        WeightsInit::Seed(seed) => Ok(crate::models::mlp::init_params(*seed)),
        WeightsInit::Blob(b) => Params::from_safetensors(&store.get(b)?),
    }
}

/// Runs a training job: output bytes are the final weights (safetensors), with the
/// transcript root alongside.
pub fn run_training_job(
    spec: &TrainingSpec,
    store: &BlobStore,
    backend: Backend,
) -> Result<JobOutput> {
    let data = Digits::parse_gz(&store.get(&spec.dataset)?)?;
    let init = initial_weights(spec, store)?;
    let (coord, report) = match backend {
        Backend::Canonical => run_training(spec, &data, &init, &CanonicalGrad)?,
        other => crate::with_burn_backend!(other, |B, device| {
            let grad = BurnGrad::<burn::backend::Autodiff<B>>::new(device);
            run_training(spec, &data, &init, &grad)?
        }),
    };
    tracing::info!(
        accuracy = report.test_accuracy,
        upload_ratio = report.compression_ratio,
        total_ratio = report.total_ratio,
        "training finished"
    );
    Ok(JobOutput::new(
        JobKind::Training,
        coord.weights().to_safetensors()?,
        Some(report.transcript_root),
    ))
}
