//! One worker of a networked training job, as a leased provider runs it.

use std::time::{Duration, Instant};

use gpuchain_jobspec::TrainingSpec;

use super::protocol::{RoundStatus, Submission, Transcript};
use crate::blob::BlobFetcher;
use crate::params::Params;
use crate::train::coordinator::{apply_broadcast, weights_hash};
use crate::train::{merkle_root, RoundRecord, TrainTask, UpdateMessage, Worker};
use crate::{Backend, Error, Result};

/// What a worker ends with.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteWorkerResult {
    /// The transcript root, checked against the records and the final weights.
    pub transcript_root: [u8; 32],
    /// The final weights (safetensors).
    pub final_weights: Vec<u8>,
    /// Rounds this worker ran.
    pub rounds_run: u32,
    /// Times it downloaded the weights whole (the first round's; any round whose broadcast
    /// did not reproduce the coordinator's weights).
    pub whole_weight_downloads: u32,
    /// Rounds' weights it made from the previous round's and the coordinator's broadcast.
    pub broadcasts_applied: u32,
}

fn training(msg: impl Into<String>) -> Error {
    Error::Training(msg.into())
}

async fn get_json<T: serde::de::DeserializeOwned>(http: &reqwest::Client, url: &str) -> Result<T> {
    let response = http
        .get(url)
        .send()
        .await
        .map_err(|e| training(format!("GET {url}: {e}")))?;
    if !response.status().is_success() {
        return Err(training(format!("GET {url}: {}", response.status())));
    }
    let body = response
        .bytes()
        .await
        .map_err(|e| training(format!("GET {url}: {e}")))?;
    serde_json::from_slice(&body).map_err(|e| training(format!("GET {url}: {e}")))
}

/// Runs worker `index` of `spec` against the coordinator at `base_url` until every round
/// is done or `timeout` passes. `task` is the job's, loaded from its blobs; the worker
/// trains on its shard of the training split, the same shard a single-process run gives it. Before returning
/// it checks that the transcript records each of its updates and that the root recomputes.
pub async fn run_remote_worker(
    base_url: &str,
    spec: &TrainingSpec,
    index: u32,
    task: &TrainTask,
    backend: Backend,
    fetcher: &BlobFetcher,
    timeout: Duration,
) -> Result<RemoteWorkerResult> {
    let base = base_url.trim_end_matches('/');
    // The coordinator's URL comes from the order, like a blob's: the same hosts are allowed.
    let policy = fetcher.policy();
    if let Some(why) = policy.refuse(base) {
        return Err(training(format!("coordinator {base}: refused: {why}")));
    }
    let http = policy
        .client_builder()
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| training(format!("http client: {e}")))?;
    let grad = task.grad(backend);
    let mut worker = Some(Worker::new(
        index,
        task.init.numel(),
        task.shard(index, spec.workers),
    ));
    let mut sent: Vec<[u8; 32]> = Vec::new();
    // The weights the last round started from, and that round.
    let mut held: Option<(u32, Params)> = None;
    let mut downloads = Downloads::default();
    let started = Instant::now();
    loop {
        if started.elapsed() > timeout {
            return Err(training(format!(
                "worker {index}: training did not finish within {timeout:?}"
            )));
        }
        let status: RoundStatus = get_json(&http, &format!("{base}/train/status")).await?;
        if status.workers != spec.workers || status.rounds != spec.rounds {
            return Err(training(format!(
                "the coordinator runs {} workers × {} rounds; the spec says {} × {}",
                status.workers, status.rounds, spec.workers, spec.rounds
            )));
        }
        if status.done() {
            let weights =
                round_weights(base, &status, held, spec.workers, fetcher, &mut downloads).await?;
            return finish(&http, base, index, &sent, status, weights, downloads).await;
        }
        let next = sent.len() as u32;
        if status.round != next || status.submitted.contains(&index) {
            if status.round > next {
                return Err(training(format!(
                    "worker {index} has run {next} rounds but the coordinator is at round {}",
                    status.round
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        let weights = round_weights(
            base,
            &status,
            held.take(),
            spec.workers,
            fetcher,
            &mut downloads,
        )
        .await?;
        held = Some((status.round, weights.clone()));
        let mut w = worker.take().ok_or_else(|| training("worker state lost"))?;
        let checkpoint = w.checkpoint();
        let job = spec.clone();
        let round = status.round;
        let grad = grad.clone();
        let (w, out) = tokio::task::spawn_blocking(move || {
            let out = w.run_round(&job, round, &weights, grad.as_ref());
            (w, out)
        })
        .await
        .map_err(|e| training(format!("round task: {e}")))?;
        worker = Some(w);
        let out = out?;
        let submission = Submission {
            worker: index,
            round,
            update: out.bytes.clone(),
            checkpoint,
            mean_loss_bits: out.mean_loss.to_bits(),
        };
        let body = borsh::to_vec(&submission).map_err(|e| training(e.to_string()))?;
        let response = http
            .post(format!("{base}/train/submit"))
            .body(body)
            .send()
            .await
            .map_err(|e| training(format!("submitting round {round}: {e}")))?;
        if !response.status().is_success() {
            let code = response.status();
            let text = response.text().await.unwrap_or_default();
            return Err(training(format!("round {round} refused: {code}: {text}")));
        }
        sent.push(*blake3::hash(&out.bytes).as_bytes());
    }
}

/// How a worker came by each round's weights.
#[derive(Default)]
struct Downloads {
    whole: u32,
    broadcasts: u32,
}

/// The weights `status.round` starts from: from the previous round's (`held`) and the
/// coordinator's broadcast when the worker holds them, checked against the hash of the
/// weights the coordinator publishes; downloaded whole otherwise, or when the result differs.
async fn round_weights(
    base: &str,
    status: &RoundStatus,
    held: Option<(u32, Params)>,
    workers: u32,
    fetcher: &BlobFetcher,
    downloads: &mut Downloads,
) -> Result<Params> {
    if let Some((before, weights)) = held.filter(|(r, _)| r + 1 == status.round) {
        if let Some(next) = from_broadcast(base, status, weights, workers, fetcher).await? {
            downloads.broadcasts += 1;
            return Ok(next);
        }
        tracing::warn!(
            round = status.round,
            after = before,
            "weights from the broadcast differ from the coordinator's; fetching them whole"
        );
    }
    downloads.whole += 1;
    fetch_weights(base, status, fetcher).await
}

/// `weights` advanced by the coordinator's broadcast; `None` when there is none or the
/// result is not the weights the coordinator publishes.
async fn from_broadcast(
    base: &str,
    status: &RoundStatus,
    mut weights: Params,
    workers: u32,
    fetcher: &BlobFetcher,
) -> Result<Option<Params>> {
    let Some(mut blob) = status.broadcast.clone() else {
        return Ok(None);
    };
    blob.urls = vec![format!("{base}/blob/{}", hex::encode(blob.blake3))];
    let path = fetcher.fetch(&blob, &|_| {}).await?;
    let message = UpdateMessage::decode(&tokio::fs::read(path).await?)?;
    let mut flat = weights.flatten();
    if message.round + 1 != status.round {
        return Err(training(format!(
            "the broadcast is of round {}; round {} needs round {}'s",
            message.round,
            status.round,
            status.round.saturating_sub(1)
        )));
    }
    apply_broadcast(&mut flat, &message, workers)?;
    weights.unflatten(&flat)?;
    let same = *blake3::hash(&weights.to_safetensors()?).as_bytes() == status.weights.blake3;
    Ok(same.then_some(weights))
}

async fn fetch_weights(base: &str, status: &RoundStatus, fetcher: &BlobFetcher) -> Result<Params> {
    let mut blob = status.weights.clone();
    blob.urls = vec![format!("{base}/blob/{}", hex::encode(blob.blake3))];
    let path = fetcher.fetch(&blob, &|_| {}).await?;
    Params::from_safetensors(&tokio::fs::read(path).await?)
}

async fn finish(
    http: &reqwest::Client,
    base: &str,
    index: u32,
    sent: &[[u8; 32]],
    status: RoundStatus,
    weights: Params,
    downloads: Downloads,
) -> Result<RemoteWorkerResult> {
    let transcript: Transcript = get_json(http, &format!("{base}/train/transcript")).await?;
    let records: Vec<RoundRecord> = transcript
        .records
        .iter()
        .map(|r| r.to_record())
        .collect::<Option<_>>()
        .ok_or_else(|| training("malformed transcript"))?;
    if records.len() != sent.len() {
        return Err(training(format!(
            "the transcript has {} rounds; worker {index} ran {}",
            records.len(),
            sent.len()
        )));
    }
    for (record, mine) in records.iter().zip(sent) {
        if record.update_hashes.get(index as usize) != Some(mine) {
            return Err(training(format!(
                "round {} of the transcript does not hold worker {index}'s update",
                record.round
            )));
        }
    }
    let mut leaves: Vec<[u8; 32]> = records.iter().map(RoundRecord::leaf).collect();
    leaves.push(weights_hash(&weights));
    let root = merkle_root(&leaves);
    if status.transcript_root.as_deref() != Some(hex::encode(root).as_str()) {
        return Err(training(
            "the coordinator's transcript root does not recompute",
        ));
    }
    Ok(RemoteWorkerResult {
        transcript_root: root,
        final_weights: weights.to_safetensors()?,
        rounds_run: sent.len() as u32,
        whole_weight_downloads: downloads.whole,
        broadcasts_applied: downloads.broadcasts,
    })
}
