//! Running a won job: fetch and verify its blobs, run it on the chosen backend off the async
//! runtime, and put the result in the blob store, where the blob server serves it by hash.
//! The dishonest test modes alter the job or its result here.

use std::time::{Duration, Instant};

use gpuchain_compute::blob::{BlobFetcher, BlobStore};
use gpuchain_compute::train::remote::run_remote_worker;
use gpuchain_compute::train::TrainTask;
use gpuchain_compute::{fetch_job_blobs, run_job, Backend};
use gpuchain_jobspec::{BlobHash, BlobRef, JobSpec, TrainingSpec};

use crate::dishonest::{altered_spec, random_bytes, Dishonest};

/// A produced result.
#[derive(Clone, Debug)]
pub(crate) struct Produced {
    /// Hash to commit to: the result's blake3, or the training transcript root.
    pub(crate) result_hash: [u8; 32],
    pub(crate) fetch_seconds: f64,
    pub(crate) execute_seconds: f64,
}

/// Fetches every blob of `spec`, verifying hashes; returns the seconds it took.
pub(crate) async fn fetch(spec: &JobSpec, fetcher: &BlobFetcher) -> Result<f64, String> {
    let start = Instant::now();
    let work = fetch_job_blobs(spec, fetcher, &|p| {
        tracing::debug!(url = %p.url, received = p.received, total = p.total, "fetching blob");
    });
    match tokio::time::timeout(Duration::from_secs(600), work).await {
        Ok(Ok(())) => Ok(start.elapsed().as_secs_f64()),
        Ok(Err(e)) => Err(format!("fetching blobs: {e}")),
        Err(_) => Err("fetching blobs took longer than 600 s".into()),
    }
}

/// Runs worker `index` of a networked training job against the client's coordinator; the
/// final weights go to the blob store and the result is the verified transcript root.
pub(crate) async fn produce_training(
    spec: TrainingSpec,
    coordinator: String,
    index: u32,
    fetcher: BlobFetcher,
    backend: Backend,
) -> Result<Produced, String> {
    let fetch_seconds = fetch(&JobSpec::Training(spec.clone()), &fetcher).await?;
    let store = fetcher.store().clone();
    let task = {
        let (spec, store) = (spec.clone(), store.clone());
        tokio::task::spawn_blocking(move || TrainTask::load(&spec, &store))
            .await
            .map_err(|e| format!("loading the training task: {e}"))?
            .map_err(|e| format!("reading the dataset and weights: {e}"))?
    };
    let start = Instant::now();
    // A round waits for the slowest worker; give the whole job a generous bound.
    let timeout = Duration::from_secs(60 + 30 * u64::from(spec.rounds));
    let result = run_remote_worker(
        &coordinator,
        &spec,
        index,
        &task,
        backend,
        &fetcher,
        timeout,
    )
    .await
    .map_err(|e| format!("training as worker {index}: {e}"))?;
    store
        .put(&result.final_weights)
        .map_err(|e| format!("storing the final weights: {e}"))?;
    tracing::info!(
        worker = index,
        rounds = result.rounds_run,
        root = %hex::encode(result.transcript_root),
        "training done; transcript checked"
    );
    Ok(Produced {
        result_hash: result.transcript_root,
        fetch_seconds,
        execute_seconds: start.elapsed().as_secs_f64(),
    })
}

/// Fetches, runs and stores the result of `spec`.
pub(crate) async fn produce(
    spec: JobSpec,
    fetcher: BlobFetcher,
    backend: Backend,
    cheat: Option<Dishonest>,
    earlier_result: Option<String>,
    delay: Duration,
) -> Result<Produced, String> {
    let fetch_seconds = fetch(&spec, &fetcher).await?;
    if !delay.is_zero() {
        tracing::info!(?delay, "test delay before execution");
        tokio::time::sleep(delay).await;
    }
    let store = fetcher.store().clone();
    if cheat == Some(Dishonest::Stale) {
        if let Some(hash) = earlier_result.as_deref().and_then(earlier_in_store(&store)) {
            tracing::warn!(%hash, "dishonest: revealing an earlier job's result");
            return Ok(Produced {
                result_hash: hash.0,
                fetch_seconds,
                execute_seconds: 0.0,
            });
        }
    }
    let start = Instant::now();
    let output = tokio::task::spawn_blocking(move || run_blocking(&spec, &store, backend, cheat))
        .await
        .map_err(|e| format!("job task panicked: {e}"))??;
    Ok(Produced {
        result_hash: output,
        fetch_seconds,
        execute_seconds: start.elapsed().as_secs_f64(),
    })
}

fn earlier_in_store(store: &BlobStore) -> impl Fn(&str) -> Option<BlobHash> + '_ {
    move |hex| BlobHash::from_hex(hex).filter(|h| store.contains(h))
}

fn run_blocking(
    spec: &JobSpec,
    store: &BlobStore,
    backend: Backend,
    cheat: Option<Dishonest>,
) -> Result<[u8; 32], String> {
    let spec = match cheat {
        Some(kind @ (Dishonest::WrongModel | Dishonest::SkipLayer | Dishonest::Stale)) => {
            tracing::warn!(?kind, "dishonest: running an altered job");
            altered_spec(spec, store, kind).map_err(|e| e.to_string())?
        }
        _ => spec.clone(),
    };
    let out = run_job(&spec, store, backend).map_err(|e| format!("running job: {e}"))?;
    let bytes = if cheat == Some(Dishonest::RandomOutput) {
        tracing::warn!("dishonest: replacing the result with random bytes");
        random_bytes(out.bytes.len())
    } else {
        out.bytes
    };
    if cheat == Some(Dishonest::Withhold) {
        tracing::warn!("dishonest: revealing the output's hash without serving it");
        return Ok(gpuchain_compute::blob::hash_bytes(&bytes).0);
    }
    let stored: BlobRef = store
        .put(&bytes)
        .map_err(|e| format!("storing result: {e}"))?;
    Ok(match out.transcript_root {
        Some(root) if cheat.is_none() => root,
        _ => stored.blake3,
    })
}
