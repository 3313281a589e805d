//! Checking one revealed result: fetch the job's blobs (hash-verified), fetch the
//! provider's output from `<endpoint_url>/blob/<result_hash>`, re-execute, and compare
//! under the job kind's tolerance. An output that cannot be fetched, or whose bytes do not
//! hash to the revealed result hash, is faulty; numeric drift within tolerance is honest.
//! Training results go to [`crate::training`].

use std::time::Instant;

use gpuchain_compute::blob::{fetch_output, BlobFetcher, OutputLimits};
use gpuchain_compute::llama::check_generation;
use gpuchain_compute::{compare, fetch_job_blobs, run_job, Backend, Verdict};
use gpuchain_jobspec::{InferenceSpec, JobKind, JobSpec};
use gpuchain_verify::VerdictKind;

use crate::one_thread::on_one_thread;

/// What to check.
#[derive(Clone, Debug)]
pub(crate) struct Job {
    pub(crate) lease_id: u64,
    pub(crate) spec: JobSpec,
    /// The revealed result hash.
    pub(crate) result_hash: [u8; 32],
    /// The provider's registered blob server.
    pub(crate) endpoint_url: String,
    /// Worker index of the lease (its rank by id among the order's leases), for training.
    pub(crate) worker: u32,
    pub(crate) backend: Backend,
    /// The lease was accepted but nobody other than its provider fetched its output: only
    /// check that the output can be fetched and hashes to the revealed hash.
    pub(crate) availability_only: bool,
}

/// A finding.
#[derive(Clone, Debug)]
pub(crate) struct Finding {
    pub(crate) verdict: VerdictKind,
    /// blake3 of the agent's own output.
    pub(crate) output_hash: [u8; 32],
    /// What was compared and found.
    pub(crate) detail: String,
    /// The provider's output could not be fetched or did not match its hash.
    pub(crate) fetch_failure: bool,
    pub(crate) fetch_seconds: f64,
    pub(crate) execute_seconds: f64,
    /// Backend of the re-execution.
    pub(crate) backend: String,
    /// A training audit.
    pub(crate) training: bool,
}

impl Finding {
    /// What a lazy verifier (test mode) posts: `honest`, with nothing fetched or run.
    pub(crate) fn rubber_stamp(job: &Job) -> Finding {
        Finding {
            verdict: VerdictKind::Honest,
            output_hash: job.result_hash,
            detail: "test mode: not checked".into(),
            fetch_failure: false,
            fetch_seconds: 0.0,
            execute_seconds: 0.0,
            backend: job.backend.name(),
            training: false,
        }
    }
}

/// Limits of the checker: output fetches from provider-chosen endpoints.
pub(crate) type Limits = OutputLimits;

/// Fetches every blob of the job into the store; `Err` means the job cannot be checked
/// (not the provider's fault).
pub(crate) async fn fetch_job(
    spec: &JobSpec,
    fetcher: &BlobFetcher,
    limits: &Limits,
) -> Result<f64, String> {
    let start = Instant::now();
    let work = fetch_job_blobs(spec, fetcher, &|_| {});
    match tokio::time::timeout(limits.fetch_timeout, work).await {
        Ok(Ok(())) => Ok(start.elapsed().as_secs_f64()),
        Ok(Err(e)) => Err(format!("fetching the job's blobs: {e}")),
        Err(_) => Err("fetching the job's blobs timed out".into()),
    }
}

/// Re-executes `spec` on `backend` off the async runtime.
pub(crate) async fn execute(
    spec: JobSpec,
    fetcher: &BlobFetcher,
    backend: Backend,
) -> Result<gpuchain_compute::JobOutput, String> {
    let store = fetcher.store().clone();
    tokio::task::spawn_blocking(move || run_job(&spec, &store, backend))
        .await
        .map_err(|e| format!("re-execution panicked: {e}"))?
        .map_err(|e| format!("re-execution failed: {e}"))
}

/// Checks one result. `Err` means no verdict can be given (the job's own blobs are
/// unavailable, or the job cannot run here).
pub(crate) async fn check(
    job: Job,
    fetcher: BlobFetcher,
    http: reqwest::Client,
    limits: Limits,
) -> Result<Finding, String> {
    if let JobSpec::Training(t) = &job.spec {
        // A training result lives at its coordinator, not in a blob: checking it is
        // available is auditing it.
        return crate::training::audit(&job, t, &fetcher, &http, &limits).await;
    }
    if job.availability_only {
        return Ok(availability(&job, &http, &limits).await);
    }
    let fetch_seconds = fetch_job(&job.spec, &fetcher, &limits).await?;
    let start = Instant::now();
    let fetched = fetch_output(&http, &job.endpoint_url, &job.result_hash, &limits).await;
    let fetch_seconds = fetch_seconds + start.elapsed().as_secs_f64();
    let start = Instant::now();
    let judged = match &job.spec {
        JobSpec::Inference(spec) if job.spec.kind() == JobKind::Tokens => {
            by_teacher_forcing(&job, spec, fetched, &fetcher).await?
        }
        _ => by_re_execution(&job, fetched, &fetcher).await?,
    };
    Ok(Finding {
        verdict: judged.verdict,
        output_hash: judged.output_hash,
        detail: judged.detail,
        fetch_failure: judged.fetch_failure,
        fetch_seconds,
        execute_seconds: start.elapsed().as_secs_f64(),
        backend: job.backend.name(),
        training: false,
    })
}

/// Fetches the output from the provider (hash-checked, size-capped, timed out): `honest`
/// when it came, `faulty` when it could not be had.
async fn availability(job: &Job, http: &reqwest::Client, limits: &Limits) -> Finding {
    let start = Instant::now();
    let fetched = fetch_output(http, &job.endpoint_url, &job.result_hash, limits).await;
    let (verdict, output_hash, detail, fetch_failure) = match fetched {
        Ok(bytes) => (
            VerdictKind::Honest,
            job.result_hash,
            format!("output fetched: {} bytes, hash matches", bytes.len()),
            false,
        ),
        Err(why) => (
            VerdictKind::Faulty,
            [0; 32],
            format!("output unavailable: {why}"),
            true,
        ),
    };
    Finding {
        verdict,
        output_hash,
        detail,
        fetch_failure,
        fetch_seconds: start.elapsed().as_secs_f64(),
        execute_seconds: 0.0,
        backend: "none (availability)".into(),
        training: false,
    }
}

/// What one check found about a fetched (or unfetchable) output.
struct Judged {
    verdict: VerdictKind,
    output_hash: [u8; 32],
    detail: String,
    fetch_failure: bool,
}

impl Judged {
    fn unfetchable(why: String, output_hash: [u8; 32]) -> Judged {
        Judged {
            verdict: VerdictKind::Faulty,
            output_hash,
            detail: why,
            fetch_failure: true,
        }
    }

    fn compared(outcome: &Verdict, output_hash: [u8; 32]) -> Judged {
        Judged {
            verdict: judge(outcome),
            output_hash,
            detail: describe(outcome),
            fetch_failure: false,
        }
    }
}

/// Re-executes the job and compares under the job kind's tolerance; the verdict carries the
/// hash of the re-execution's output.
async fn by_re_execution(
    job: &Job,
    fetched: Result<Vec<u8>, String>,
    fetcher: &BlobFetcher,
) -> Result<Judged, String> {
    let mine = execute(job.spec.clone(), fetcher, job.backend).await?;
    Ok(match fetched {
        Err(why) => Judged::unfetchable(why, mine.hash.0),
        Ok(candidate) => {
            let outcome = compare(
                job.spec.kind(),
                &job.spec.tolerance(),
                &candidate,
                &mine.bytes,
            )
            .map_err(|e| format!("comparing: {e}"))?;
            Judged::compared(&outcome, mine.hash.0)
        }
    })
}

/// A decoder job is checked by teacher forcing on the candidate's own tokens
/// ([`gpuchain_compute::llama::check_generation`]): one forward pass instead of a generation,
/// and a near-tie that flipped on another backend is told apart from tokens the model never
/// picked. The pass runs on one thread ([`on_one_thread`]). The verdict carries the hash of
/// the output that was checked (all zeros when it could not be fetched).
async fn by_teacher_forcing(
    job: &Job,
    spec: &InferenceSpec,
    fetched: Result<Vec<u8>, String>,
    fetcher: &BlobFetcher,
) -> Result<Judged, String> {
    let candidate = match fetched {
        Ok(bytes) => bytes,
        Err(why) => return Ok(Judged::unfetchable(why, [0; 32])),
    };
    let (spec, store, backend) = (spec.clone(), fetcher.store().clone(), job.backend);
    let outcome = on_one_thread(move || check_generation(&spec, &store, backend, &candidate))
        .await?
        .map_err(|e| format!("checking the tokens: {e}"))?;
    Ok(Judged::compared(&outcome, job.result_hash))
}

/// `honest` when the comparison accepts the candidate.
pub(crate) fn judge(v: &Verdict) -> VerdictKind {
    if v.accepted() {
        VerdictKind::Honest
    } else {
        VerdictKind::Faulty
    }
}

fn describe(v: &Verdict) -> String {
    match v {
        Verdict::Identical => "identical".into(),
        Verdict::WithinTolerance { metrics } => format!(
            "within tolerance (rel L2 {} ppm, agreement {} ppm)",
            metrics.rel_l2_ppm, metrics.agreement_ppm
        ),
        Verdict::Mismatch { reason, .. } => format!("mismatch: {reason}"),
    }
}
