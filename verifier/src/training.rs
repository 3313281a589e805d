//! Training audits. With a coordinator (`TrainingSpec.coordinator_url`) the agent reads the
//! run's status and transcript (`GET /train/status`, `GET /train/transcript`), checks that
//! the revealed result is the run's transcript root, picks one round deterministically from
//! the lease id, rebuilds that round's starting weights by replaying every earlier round's
//! updates (each checked against its transcript hash), and audits the lease's worker
//! segment with [`gpuchain_compute::train::audit_segment`]: the update must match a
//! canonical re-run within the job's tolerance and lower the loss on the worker's batches.
//! Without a coordinator each provider ran every worker itself; the agent re-runs the whole
//! job and the transcript root must reproduce.

use std::time::Instant;

use gpuchain_compute::blob::BlobFetcher;
use gpuchain_compute::train::remote::{RoundStatus, Transcript};
use gpuchain_compute::train::{audit_segment, Coordinator, TrainTask};
use gpuchain_compute::Backend;
use gpuchain_jobspec::{BlobRef, TrainingSpec};
use gpuchain_verify::VerdictKind;
use serde::de::DeserializeOwned;

use crate::check::{execute, fetch_job, Finding, Job, Limits};

/// The round audited for a lease: `blake3("gpuchain/verifier/train-round" ‖ lease id ‖
/// transcript root) mod rounds`, so every verifier of the case audits the same segment,
/// and which one is fixed only once the whole transcript (every round) is.
pub(crate) fn audit_round(lease_id: u64, root: &[u8; 32], rounds: u32) -> u32 {
    let mut h = blake3::Hasher::new();
    h.update(b"gpuchain/verifier/train-round");
    h.update(&lease_id.to_be_bytes());
    h.update(root);
    let mut first = [0u8; 8];
    first.copy_from_slice(&h.finalize().as_bytes()[..8]);
    u32::try_from(u64::from_be_bytes(first) % u64::from(rounds.max(1))).unwrap_or(0)
}

async fn get_json<T: DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
    limits: &Limits,
) -> Result<T, String> {
    let get = async {
        let resp = http
            .get(url)
            .send()
            .await
            .map_err(|e| format!("GET {url}: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("GET {url}: status {}", resp.status()));
        }
        let body = resp.bytes().await.map_err(|e| format!("GET {url}: {e}"))?;
        serde_json::from_slice(&body).map_err(|e| format!("GET {url}: {e}"))
    };
    tokio::time::timeout(limits.fetch_timeout, get)
        .await
        .map_err(|_| format!("GET {url}: timed out"))?
}

/// A coordinator blob, fetched and verified into the store.
async fn coordinator_blob(
    base: &str,
    blob: &BlobRef,
    fetcher: &BlobFetcher,
) -> Result<Vec<u8>, String> {
    let located = BlobRef {
        urls: vec![format!("{base}/blob/{}", blob.hash().to_hex())],
        ..blob.clone()
    };
    fetcher
        .fetch(&located, &|_| {})
        .await
        .map_err(|e| format!("coordinator blob: {e}"))?;
    fetcher.store().get(&located).map_err(|e| e.to_string())
}

fn finding(
    verdict: VerdictKind,
    output_hash: [u8; 32],
    detail: String,
    fetch: f64,
    exec: f64,
) -> Finding {
    Finding {
        verdict,
        output_hash,
        detail,
        fetch_failure: false,
        fetch_seconds: fetch,
        execute_seconds: exec,
        backend: "canonical".into(),
        training: true,
    }
}

/// Audits a training lease.
pub(crate) async fn audit(
    job: &Job,
    spec: &TrainingSpec,
    fetcher: &BlobFetcher,
    http: &reqwest::Client,
    limits: &Limits,
) -> Result<Finding, String> {
    let fetch_seconds = fetch_job(&job.spec, fetcher, limits).await?;
    let Some(base) = spec
        .coordinator_url
        .as_deref()
        .map(|u| u.trim_end_matches('/').to_string())
    else {
        return rerun_whole(job, fetcher, fetch_seconds).await;
    };
    let start = Instant::now();
    let status: RoundStatus = get_json(http, &format!("{base}/train/status"), limits).await?;
    let revealed = hex::encode(job.result_hash);
    if status.transcript_root.as_deref() != Some(revealed.as_str()) {
        let detail = format!(
            "revealed {revealed} is not the coordinator's transcript root {:?}",
            status.transcript_root
        );
        return Ok(finding(
            VerdictKind::Faulty,
            [0; 32],
            detail,
            fetch_seconds,
            0.0,
        ));
    }
    let transcript: Transcript =
        get_json(http, &format!("{base}/train/transcript"), limits).await?;
    let round = audit_round(job.lease_id, &job.result_hash, spec.rounds);
    let records: Vec<_> = transcript
        .records
        .iter()
        .filter_map(|r| r.to_record())
        .collect();
    let record = records
        .iter()
        .find(|r| r.round == round)
        .cloned()
        .ok_or_else(|| format!("the transcript has no round {round}"))?;
    let pick = |list: &[(u32, u32, BlobRef)], r: u32, w: u32| {
        list.iter()
            .find(|(rr, ww, _)| *rr == r && *ww == w)
            .map(|(_, _, b)| b.clone())
    };
    // Rebuild the round's weights from the start by replaying every earlier round.
    let store = fetcher.store();
    let task = TrainTask::load(spec, store).map_err(|e| e.to_string())?;
    let mut coord = Coordinator::new(spec, &task.init);
    for r in 0..round {
        let mut messages = Vec::new();
        for w in 0..spec.workers {
            let blob = pick(&transcript.updates, r, w)
                .ok_or_else(|| format!("no update of worker {w}, round {r}"))?;
            messages.push(coordinator_blob(&base, &blob, fetcher).await?);
        }
        coord.apply_round(&messages).map_err(|e| e.to_string())?;
    }
    let weights = coord.weights();
    let checkpoint = pick(&transcript.checkpoints, round, job.worker)
        .ok_or_else(|| format!("no checkpoint of worker {}, round {round}", job.worker))?;
    let checkpoint = coordinator_blob(&base, &checkpoint, fetcher).await?;
    let claimed = pick(&transcript.updates, round, job.worker)
        .ok_or_else(|| format!("no update of worker {}, round {round}", job.worker))?;
    let claimed = coordinator_blob(&base, &claimed, fetcher).await?;
    let fetch_seconds = fetch_seconds + start.elapsed().as_secs_f64();
    let shard = task.shard(job.worker, spec.workers);
    // The digits MLP is audited on its canonical gradient, the classifier on the CPU one.
    let grad = task.grad(Backend::Canonical);
    let (sp, max) = (spec.clone(), u64::from(job.spec.tolerance().rel_l2_ppm_max));
    let start = Instant::now();
    let report = tokio::task::spawn_blocking(move || {
        audit_segment(
            &sp,
            &record,
            &weights,
            &checkpoint,
            shard,
            &claimed,
            grad.as_ref(),
            max,
        )
    })
    .await
    .map_err(|e| format!("audit panicked: {e}"))?;
    let execute_seconds = start.elapsed().as_secs_f64();
    Ok(match report {
        Ok(r) if r.accepted => finding(
            VerdictKind::Honest,
            job.result_hash,
            format!(
                "round {round} worker {}: update within {} ppm, loss {} -> {}",
                job.worker, r.update_rel_l2_ppm, r.loss_before, r.loss_after
            ),
            fetch_seconds,
            execute_seconds,
        ),
        Ok(r) => finding(
            VerdictKind::Faulty,
            *blake3::hash(format!("{r:?}").as_bytes()).as_bytes(),
            format!(
                "round {round} worker {}: update off by {} ppm or loss {} -> {} did not improve",
                job.worker, r.update_rel_l2_ppm, r.loss_before, r.loss_after
            ),
            fetch_seconds,
            execute_seconds,
        ),
        Err(e) => finding(
            VerdictKind::Faulty,
            [0; 32],
            format!("round {round}: segment does not audit: {e}"),
            fetch_seconds,
            execute_seconds,
        ),
    })
}

/// Without a coordinator: the whole job again, canonical first then the CPU fast path; the
/// revealed transcript root must be one of them.
async fn rerun_whole(
    job: &Job,
    fetcher: &BlobFetcher,
    fetch_seconds: f64,
) -> Result<Finding, String> {
    let start = Instant::now();
    let mut roots = Vec::new();
    for backend in [Backend::Canonical, Backend::Cpu] {
        let out = execute(job.spec.clone(), fetcher, backend).await?;
        let root = out.transcript_root.unwrap_or(out.hash.0);
        if root == job.result_hash {
            let detail = format!("transcript root reproduced on {}", backend.name());
            return Ok(finding(
                VerdictKind::Honest,
                root,
                detail,
                fetch_seconds,
                start.elapsed().as_secs_f64(),
            ));
        }
        roots.push(root);
    }
    Ok(finding(
        VerdictKind::Faulty,
        roots[0],
        "transcript root does not reproduce on the canonical or CPU path".into(),
        fetch_seconds,
        start.elapsed().as_secs_f64(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_audited_round_is_a_function_of_the_lease() {
        let root = [9u8; 32];
        assert_eq!(audit_round(7, &root, 5), audit_round(7, &root, 5));
        assert!((0..200).all(|l| audit_round(l, &root, 4) < 4));
        let spread: std::collections::BTreeSet<u32> =
            (0..200).map(|l| audit_round(l, &root, 4)).collect();
        assert_eq!(spread.len(), 4);
        assert_eq!(audit_round(3, &root, 0), 0);
    }
}
