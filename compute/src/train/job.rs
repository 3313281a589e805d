//! Running a whole training job in one process (simulated workers), as the local CLI and the
//! tests do.

use gpuchain_jobspec::{JobKind, TrainingSpec};

use super::coordinator::{Coordinator, TrainReport};
use super::grad::GradFn;
use super::task::TrainTask;
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
    run_task(spec, &TrainTask::digits(data, init.clone()), grad)
}

/// Trains `task` over `spec.workers` simulated workers and returns the final coordinator
/// and a report.
pub fn run_task(
    spec: &TrainingSpec,
    task: &TrainTask,
    grad: &dyn GradFn,
) -> Result<(Coordinator, TrainReport)> {
    run_task_observed(spec, task, grad, &mut |_, _| Ok(()))
}

/// [`run_task`], calling `after_round` with the coordinator and the workers' mean loss each
/// time a round closes.
pub fn run_task_observed(
    spec: &TrainingSpec,
    task: &TrainTask,
    grad: &dyn GradFn,
    after_round: &mut dyn FnMut(&Coordinator, f32) -> Result<()>,
) -> Result<(Coordinator, TrainReport)> {
    spec_check(spec)?;
    let init = &task.init;
    let k = spec.workers;
    let mut workers: Vec<Worker> = (0..k)
        .map(|w| Worker::new(w, init.numel(), task.shard(w, k)))
        .collect();
    let mut coord = Coordinator::new(spec, init);
    let mut final_loss = 0.0;
    while coord.round() < spec.rounds {
        let weights = coord.weights();
        let mut messages = Vec::with_capacity(workers.len());
        let mut loss = 0.0;
        for w in &mut workers {
            let out = w.run_round(spec, coord.round(), &weights, grad)?;
            loss += out.mean_loss;
            messages.push(out.bytes);
        }
        final_loss = loss / k as f32;
        coord.apply_round(&messages)?;
        after_round(&coord, final_loss)?;
    }
    let k = u64::from(k);
    let sent: u64 = coord
        .records()
        .iter()
        .flat_map(|r| r.update_bytes.iter())
        .sum();
    let bytes_per_worker = sent / k;
    let bytes_down_per_worker: u64 = coord.records().iter().map(|r| r.broadcast_bytes).sum();
    let dense = u64::from(spec.rounds) * init.numel() as u64 * 4;
    let report = TrainReport {
        test_accuracy: task.evaluate(&coord.weights())?,
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

/// Runs a training job: output bytes are the final weights (safetensors), with the
/// transcript root alongside.
pub fn run_training_job(
    spec: &TrainingSpec,
    store: &BlobStore,
    backend: Backend,
) -> Result<JobOutput> {
    let task = TrainTask::load(spec, store)?;
    let grad = task.grad(backend);
    let (coord, report) = run_task(spec, &task, grad.as_ref())?;
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
