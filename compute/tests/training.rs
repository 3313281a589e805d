//! Data-parallel training with compressed updates on the digits MLP.

use gpuchain_compute::digits::Digits;
use gpuchain_compute::models::mlp;
use gpuchain_compute::train::{
    run_training, worker::Worker, BurnGrad, CanonicalGrad, Coordinator, GradFn,
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
    let (x, y) = (&data.pixels[..64 * 64], &data.labels[..64]);
    let (l1, g1) = CanonicalGrad.loss_and_grad(&p, x, y).unwrap();
    let burn = BurnGrad::<gpuchain_compute::backend::CpuAutodiff>::new(Default::default());
    let (l2, g2) = burn.loss_and_grad(&p, x, y).unwrap();
    assert!((l1 - l2).abs() < 1e-4, "loss {l1} vs {l2}");
    let rel = gpuchain_compute::compare::rel_l2_ppm(&g2, &g1);
    assert!(rel < 100, "gradient rel L2 {rel} ppm");
}
