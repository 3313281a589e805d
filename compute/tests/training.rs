//! Data-parallel training with compressed updates on the digits MLP.

use gpuchain_compute::digits::Digits;
use gpuchain_compute::models::mlp;
use gpuchain_compute::train::{
    run_training, worker::Worker, Batch, BurnGrad, CanonicalGrad, Coordinator, GradFn,
    UpdateMessage,
};
use gpuchain_jobspec::{TrainingSpec, ValueBits, WeightsInit};

fn spec(topk_ppm: u32, error_feedback: bool) -> TrainingSpec {
    TrainingSpec {
        arch: gpuchain_jobspec::ModelArch::DigitsMlp,
        init: WeightsInit::Seed(1),
        dataset: gpuchain_compute::digits::builtin_blob(),
        workers: 4,
        rounds: 60,
        local_steps: 4,
        batch_size: 16,
        lr_ppm: 100_000,
        momentum_ppm: 900_000,
        topk_ppm,
        value_bits: ValueBits::B16,
        error_feedback,
        momentum_correction: false,
        warmup_rounds: 0,
        seed: 5,
        tolerance: None,
        coordinator_url: None,
    }
}

#[test]
fn top_one_percent_with_error_feedback_matches_dense_training() {
    let data = Digits::builtin().unwrap();
    let init = mlp::init_params(1);
    let specs = [
        spec(1_000_000, true),
        spec(10_000, true),
        spec(10_000, false),
    ];
    let reports: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = specs
            .iter()
            .map(|sp| s.spawn(|| run_training(sp, &data, &init, &CanonicalGrad).unwrap().1))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (dense, ef, no_ef) = (&reports[0], &reports[1], &reports[2]);
    println!(
        "dense      acc {:.4} ratio {:.1}x",
        dense.test_accuracy, dense.compression_ratio
    );
    println!(
        "top-1% EF  acc {:.4} ratio {:.1}x",
        ef.test_accuracy, ef.compression_ratio
    );
    println!(
        "top-1% noEF acc {:.4} ratio {:.1}x (gap {:.2} points)",
        no_ef.test_accuracy,
        no_ef.compression_ratio,
        100.0 * (dense.test_accuracy - no_ef.test_accuracy)
    );
    assert!(
        dense.test_accuracy > 0.9,
        "dense training works: {}",
        dense.test_accuracy
    );
    assert!(
        dense.test_accuracy - ef.test_accuracy <= 0.005,
        "top-1% + EF {:.4} vs dense {:.4}",
        ef.test_accuracy,
        dense.test_accuracy
    );
    assert!(
        ef.compression_ratio >= 45.0,
        "compression {}",
        ef.compression_ratio
    );
    // Both directions: each worker also receives every round's broadcast (the union of the
    // workers' entries, f32), not the whole weights.
    println!(
        "top-1% EF  up {} B, down {} B, dense {} B each way: {:.1}x both directions",
        ef.bytes_per_worker, ef.bytes_down_per_worker, ef.dense_bytes_per_worker, ef.total_ratio
    );
    assert!(ef.bytes_down_per_worker > ef.bytes_per_worker);
    assert!(ef.total_ratio >= 10.0, "both directions {}", ef.total_ratio);
    // Dense f16 updates up and a dense f32 broadcast down: about 2 / 1.5 of dense f32.
    assert!(
        (1.0..1.5).contains(&dense.total_ratio),
        "dense updates make a dense broadcast: {}",
        dense.total_ratio
    );
}

#[test]
fn a_broadcast_takes_a_worker_from_one_rounds_weights_to_the_next_bit_for_bit() {
    use gpuchain_compute::train::apply_broadcast;
    let data = Digits::builtin().unwrap();
    let init = mlp::init_params(3);
    let sp = spec(10_000, true);
    let (train, _) = data.split();
    let mut workers: Vec<Worker> = (0..4)
        .map(|w| Worker::new(w, init.numel(), train.shard(w as usize, 4)))
        .collect();
    let mut coord = Coordinator::new(&sp, &init);
    let mut mirror = init.flatten();
    for _ in 0..3 {
        let weights = coord.weights();
        let messages: Vec<Vec<u8>> = workers
            .iter_mut()
            .map(|w| {
                w.run_round(&sp, coord.round(), &weights, &CanonicalGrad)
                    .unwrap()
                    .bytes
            })
            .collect();
        coord.apply_round(&messages).unwrap();
        let broadcast = UpdateMessage::decode(coord.broadcast()).unwrap();
        apply_broadcast(&mut mirror, &broadcast, 4).unwrap();
        let want = coord.weights().flatten();
        assert!(mirror
            .iter()
            .zip(&want)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
        let record = coord.records().last().unwrap();
        assert_eq!(
            record.broadcast_hash,
            *blake3::hash(coord.broadcast()).as_bytes()
        );
        assert!(
            broadcast.indices.len()
                <= 4 * messages
                    .iter()
                    .map(|m| UpdateMessage::decode(m).unwrap().indices.len())
                    .max()
                    .unwrap()
        );
    }
    // A broadcast for weights of another size, or from a worker, is refused.
    let broadcast = UpdateMessage::decode(coord.broadcast()).unwrap();
    assert!(apply_broadcast(&mut mirror[1..].to_vec(), &broadcast, 4).is_err());
    let mut forged = broadcast.clone();
    forged.worker = 0;
    assert!(apply_broadcast(&mut mirror, &forged, 4).is_err());
}

#[test]
fn training_is_reproducible_and_a_replaced_worker_resumes_exactly() {
    let data = Digits::builtin().unwrap();
    let init = mlp::init_params(2);
    let mut sp = spec(10_000, true);
    sp.rounds = 6;
    let (full, report) = run_training(&sp, &data, &init, &CanonicalGrad).unwrap();
    let (again, _) = run_training(&sp, &data, &init, &CanonicalGrad).unwrap();
    assert_eq!(full.transcript_root(), again.transcript_root());
    assert_eq!(report.transcript_root, full.transcript_root());

    // Same run by hand, with worker 2 dying after round 3 and a replacement resuming from its
    // checkpoint, and the coordinator restarted from its checkpoint.
    let (train, _) = data.split();
    let mut workers: Vec<Worker> = (0..4)
        .map(|w| Worker::new(w, init.numel(), train.shard(w as usize, 4)))
        .collect();
    let mut coord = Coordinator::new(&sp, &init);
    for round in 0..6 {
        if round == 3 {
            let saved = workers[2].checkpoint();
            workers[2] = Worker::resume(&saved, train.shard(2, 4)).unwrap();
            coord = Coordinator::resume(&coord.checkpoint()).unwrap();
        }
        let weights = coord.weights();
        let msgs: Vec<Vec<u8>> = workers
            .iter_mut()
            .map(|w| {
                w.run_round(&sp, round, &weights, &CanonicalGrad)
                    .unwrap()
                    .bytes
            })
            .collect();
        coord.apply_round(&msgs).unwrap();
    }
    assert_eq!(coord.transcript_root(), full.transcript_root());
    assert!(Worker::resume(b"junk", train.shard(0, 4)).is_err());
}

#[test]
fn burn_gradient_stays_within_tolerance_of_the_canonical_gradient() {
    let data = Digits::builtin().unwrap();
    let p = mlp::init_params(3);
    let batch = Batch::Digits {
        x: data.pixels[..64 * 64].to_vec(),
        labels: data.labels[..64].to_vec(),
    };
    let (l1, g1) = CanonicalGrad.loss_and_grad(&p, &batch).unwrap();
    let burn = BurnGrad::<gpuchain_compute::backend::CpuAutodiff>::new(Default::default());
    let (l2, g2) = burn.loss_and_grad(&p, &batch).unwrap();
    assert!((l1 - l2).abs() < 1e-4, "loss {l1} vs {l2}");
    let rel = gpuchain_compute::compare::rel_l2_ppm(&g2, &g1);
    assert!(rel < 100, "gradient rel L2 {rel} ppm");
}

#[test]
fn training_jobs_on_the_fast_and_canonical_paths_agree_within_tolerance() {
    use gpuchain_compute::blob::BlobStore;
    use gpuchain_compute::{compare, run_job, Backend};
    use gpuchain_jobspec::JobSpec;
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let dataset = store.put(gpuchain_compute::digits::DIGITS_CSV_GZ).unwrap();
    let mut sp = spec(10_000, true);
    sp.rounds = 15;
    sp.dataset = dataset;
    // f32 values: with f16 the quantisation hides the backends' last-bit differences.
    sp.value_bits = ValueBits::B32;
    let job = JobSpec::Training(sp);
    let canon = run_job(&job, &store, Backend::Canonical).unwrap();
    let fast = run_job(&job, &store, Backend::Cpu).unwrap();
    assert!(canon.transcript_root.is_some());
    let verdict = compare(job.kind(), &job.tolerance(), &fast.bytes, &canon.bytes).unwrap();
    println!("training fast vs canonical: {verdict:?}");
    assert!(verdict.accepted(), "{verdict:?}");
    // Weights from another seed are not accepted.
    let JobSpec::Training(mut other) = job.clone() else {
        unreachable!()
    };
    other.init = WeightsInit::Seed(99);
    let wrong = run_job(&JobSpec::Training(other), &store, Backend::Canonical).unwrap();
    assert!(
        !compare(job.kind(), &job.tolerance(), &wrong.bytes, &canon.bytes)
            .unwrap()
            .accepted()
    );
}

#[test]
fn an_audited_segment_accepts_honest_work_and_flags_a_useless_update() {
    use gpuchain_compute::train::audit_segment;
    let data = Digits::builtin().unwrap();
    let (train, _) = data.split();
    let init = mlp::init_params(4);
    let mut sp = spec(10_000, true);
    sp.rounds = 4;
    let mut workers: Vec<Worker> = (0..4)
        .map(|w| Worker::new(w, init.numel(), train.shard(w as usize, 4)))
        .collect();
    let mut coord = Coordinator::new(&sp, &init);
    let mut saved = None;
    for round in 0..4 {
        let weights = coord.weights();
        let checkpoint = workers[1].checkpoint();
        let msgs: Vec<Vec<u8>> = workers
            .iter_mut()
            .map(|w| {
                w.run_round(&sp, round, &weights, &CanonicalGrad)
                    .unwrap()
                    .bytes
            })
            .collect();
        if round == 2 {
            saved = Some((weights, checkpoint, msgs[1].clone()));
        }
        coord.apply_round(&msgs).unwrap();
    }
    let (weights, checkpoint, claimed) = saved.unwrap();
    let record = coord.records()[2].clone();
    let honest = audit_segment(
        &sp,
        &record,
        &weights,
        &checkpoint,
        train.shard(1, 4),
        &claimed,
        &CanonicalGrad,
        20_000,
    )
    .unwrap();
    assert!(honest.identical && honest.accepted, "{honest:?}");

    // A lazy worker sends an update made of noise: its hash is in the transcript, but the
    // audit re-run differs and the loss does not improve.
    let mut lazy_sp = sp.clone();
    lazy_sp.lr_ppm = 1;
    let mut lazy = Worker::resume(&checkpoint, train.shard(1, 4)).unwrap();
    let lazy_msg = lazy
        .run_round(&lazy_sp, 2, &weights, &CanonicalGrad)
        .unwrap()
        .bytes;
    let mut forged = record.clone();
    forged.update_hashes[1] = *blake3::hash(&lazy_msg).as_bytes();
    let caught = audit_segment(
        &sp,
        &forged,
        &weights,
        &checkpoint,
        train.shard(1, 4),
        &lazy_msg,
        &CanonicalGrad,
        20_000,
    )
    .unwrap();
    assert!(!caught.accepted, "{caught:?}");
    // An update that is not the one in the transcript is refused outright.
    let err = audit_segment(
        &sp,
        &record,
        &weights,
        &checkpoint,
        train.shard(1, 4),
        &lazy_msg,
        &CanonicalGrad,
        20_000,
    )
    .unwrap_err();
    assert!(err.to_string().contains("transcript hash"), "{err}");
}

#[test]
fn momentum_factor_masking_clears_the_velocity_of_sent_entries() {
    use gpuchain_compute::train::UpdateMessage;
    let data = Digits::builtin().unwrap();
    let (train, _) = data.split();
    let init = mlp::init_params(6);
    let mut sp = spec(1_000, true);
    sp.momentum_correction = true;
    let mut w = Worker::new(0, init.numel(), train.shard(0, 4));
    let msg =
        UpdateMessage::decode(&w.run_round(&sp, 0, &init, &CanonicalGrad).unwrap().bytes).unwrap();
    assert_eq!(msg.indices.len(), 10, "0.1% of 9,610 entries");
    let v = &w.state().sgd_velocity;
    assert!(msg.indices.iter().all(|i| v[*i as usize] == 0.0));
    assert!(
        v.iter().filter(|x| **x != 0.0).count() > 1000,
        "other entries keep their momentum"
    );
}
