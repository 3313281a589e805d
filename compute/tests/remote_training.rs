//! Networked training over loopback HTTP: a coordinator service and three workers, each
//! talking to it like a leased provider would, produce exactly the transcript root and
//! weights of the single-process run of the same spec; bad submissions are refused without
//! changing anything.

use std::net::SocketAddr;
use std::time::Duration;

use gpuchain_compute::blob::{BlobFetcher, BlobStore, FetchPolicy};
use gpuchain_compute::digits::Digits;
use gpuchain_compute::models::mlp;
use gpuchain_compute::train::remote::{
    run_remote_worker, serve_coordinator, CoordinatorService, Submission,
};
use gpuchain_compute::train::{run_training, CanonicalGrad, TrainTask};
use gpuchain_compute::Backend;
use gpuchain_jobspec::{TrainingSpec, ValueBits, WeightsInit};

fn spec() -> TrainingSpec {
    TrainingSpec {
        arch: gpuchain_jobspec::ModelArch::DigitsMlp,
        init: WeightsInit::Seed(3),
        dataset: gpuchain_compute::digits::builtin_blob(),
        workers: 3,
        rounds: 4,
        local_steps: 2,
        batch_size: 16,
        lr_ppm: 100_000,
        momentum_ppm: 0,
        topk_ppm: 20_000,
        value_bits: ValueBits::B16,
        error_feedback: true,
        momentum_correction: false,
        warmup_rounds: 0,
        seed: 9,
        tolerance: None,
        coordinator_url: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_networked_workers_reproduce_the_single_process_transcript() {
    let spec = spec();
    let data = Digits::builtin().unwrap();
    let init = mlp::init_params(3);
    let (local, _) = run_training(&spec, &data, &init, &CanonicalGrad).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path().join("coordinator")).unwrap();
    let service =
        CoordinatorService::new(&spec, TrainTask::digits(&data, init.clone()), store).unwrap();
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let (bound, server) = serve_coordinator(service.clone(), addr).await.unwrap();
    let url = format!("http://{bound}");

    let mut tasks = Vec::new();
    for index in 0..3u32 {
        let (url, spec) = (url.clone(), spec.clone());
        let task = TrainTask::digits(&data, init.clone());
        let store = BlobStore::open(dir.path().join(format!("worker{index}"))).unwrap();
        tasks.push(tokio::spawn(async move {
            let fetcher = BlobFetcher::with_policy(store, FetchPolicy::any_host()).unwrap();
            run_remote_worker(
                &url,
                &spec,
                index,
                &task,
                Backend::Canonical,
                &fetcher,
                Duration::from_secs(120),
            )
            .await
        }));
    }
    let mut roots = Vec::new();
    for t in tasks {
        let result = t.await.unwrap().unwrap();
        assert_eq!(result.rounds_run, 4);
        // Whole weights once; every later round's (and the final) from the broadcast.
        assert_eq!(
            (result.whole_weight_downloads, result.broadcasts_applied),
            (1, 4)
        );
        assert_eq!(
            result.final_weights,
            local.weights().to_safetensors().unwrap()
        );
        roots.push(result.transcript_root);
    }
    assert!(roots.iter().all(|r| *r == local.transcript_root()));
    assert_eq!(
        service.coordinator().transcript_root(),
        local.transcript_root()
    );

    let transcript = service.transcript();
    assert_eq!(transcript.progress.len(), 4);
    assert_eq!(
        transcript.checkpoints.len(),
        12,
        "one checkpoint per (round, worker)"
    );
    for p in &transcript.progress {
        assert!(
            p.bytes_sent * 10 < p.dense_bytes,
            "updates are sparse: {p:?}"
        );
        // The broadcast carries the union of 3 workers' entries, f32: far below whole weights.
        assert!(
            p.broadcast_bytes > 0 && p.broadcast_bytes * 3 * 5 < p.dense_bytes,
            "the broadcast is sparse: {p:?}"
        );
    }
    let status = service.status();
    assert!(status.done());

    // Once training is over nothing more is taken.
    let late = Submission {
        worker: 0,
        round: 4,
        update: vec![1, 2, 3],
        checkpoint: vec![],
        mean_loss_bits: 0,
    };
    assert!(service.submit(late).is_err());
    assert_eq!(
        service.coordinator().transcript_root(),
        local.transcript_root()
    );
    server.abort();
}

#[test]
fn malformed_or_out_of_turn_submissions_change_nothing() {
    let spec = spec();
    let data = Digits::builtin().unwrap();
    let init = mlp::init_params(3);
    let dir = tempfile::tempdir().unwrap();
    let service = CoordinatorService::new(
        &spec,
        TrainTask::digits(&data, init.clone()),
        BlobStore::open(dir.path()).unwrap(),
    )
    .unwrap();
    let before = service.status();
    let bad = |worker, round, update: Vec<u8>| Submission {
        worker,
        round,
        update,
        checkpoint: vec![],
        mean_loss_bits: 0,
    };
    assert!(
        service.submit(bad(0, 0, vec![0xff; 7])).is_err(),
        "garbage update"
    );
    assert!(service.submit(bad(7, 0, vec![])).is_err(), "no such worker");
    assert!(service.submit(bad(0, 2, vec![])).is_err(), "a future round");
    assert_eq!(service.status(), before);
}
