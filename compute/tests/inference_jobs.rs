//! Inference jobs end to end through `run_job`, and their early, clear failures.

use gpuchain_compute::blob::BlobStore;
use gpuchain_compute::models::{cnn, mlp};
use gpuchain_compute::tensor_io::{decode, encode_f32, encode_u32, Tensor};
use gpuchain_compute::{compare, run_job, Backend, Error, Verdict};
use gpuchain_jobspec::{BlobRef, InferenceSpec, JobSpec, LlamaShape, ModelArch};

fn spec(arch: ModelArch, weights: BlobRef, input: BlobRef) -> JobSpec {
    JobSpec::Inference(InferenceSpec {
        arch,
        weights,
        tokenizer: None,
        input,
        batch_size: 7,
        llama: None,
        generation: None,
        tolerance: None,
    })
}

fn digits_input(store: &BlobStore, rows: usize) -> BlobRef {
    let d = gpuchain_compute::digits::Digits::builtin().unwrap();
    let px: Vec<f32> = d.pixels[..rows * 64].iter().map(|v| v * 16.0).collect();
    store.put(&encode_f32(&[rows, 64], &px)).unwrap()
}

#[test]
fn digits_jobs_agree_across_backends_within_tolerance() {
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let input = digits_input(&store, 50);
    for (arch, params) in [
        (ModelArch::DigitsMlp, mlp::init_params(1)),
        (ModelArch::DigitsCnn, cnn::init_params(2)),
    ] {
        let weights = store.put(&params.to_safetensors().unwrap()).unwrap();
        let job = spec(arch, weights, input.clone());
        let fast = run_job(&job, &store, Backend::Cpu).unwrap();
        let canon = run_job(&job, &store, Backend::Canonical).unwrap();
        assert_eq!(fast.hash, gpuchain_compute::blob::hash_bytes(&fast.bytes));
        match decode(&fast.bytes).unwrap() {
            Tensor::F32 { dims, .. } => assert_eq!(dims, vec![50, 10]),
            other => panic!("unexpected output {other:?}"),
        }
        let verdict = compare(job.kind(), &job.tolerance(), &fast.bytes, &canon.bytes).unwrap();
        assert!(verdict.accepted(), "{arch:?}: {verdict:?}");
        // A result from other weights is caught.
        let other = store
            .put(&mlp::init_params(99).to_safetensors().unwrap())
            .unwrap();
        if arch == ModelArch::DigitsMlp {
            let wrong = run_job(&spec(arch, other, input.clone()), &store, Backend::Cpu).unwrap();
            let v = compare(job.kind(), &job.tolerance(), &wrong.bytes, &canon.bytes).unwrap();
            assert!(matches!(v, Verdict::Mismatch { .. }), "{v:?}");
        }
    }
}

#[test]
fn bad_shapes_and_weights_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let weights = store
        .put(&mlp::init_params(1).to_safetensors().unwrap())
        .unwrap();
    let wrong_width = store.put(&encode_f32(&[2, 63], &[0.0; 126])).unwrap();
    let err = run_job(
        &spec(ModelArch::DigitsMlp, weights.clone(), wrong_width),
        &store,
        Backend::Cpu,
    )
    .unwrap_err();
    assert!(err.to_string().contains("f32 [n, 64]"), "{err}");
    let ids = store.put(&encode_u32(&[1, 64], &[0; 64])).unwrap();
    let err = run_job(
        &spec(ModelArch::DigitsMlp, weights.clone(), ids),
        &store,
        Backend::Cpu,
    )
    .unwrap_err();
    assert!(err.to_string().contains("must be f32"), "{err}");
    let garbage = store.put(b"not a tensor").unwrap();
    let err = run_job(
        &spec(ModelArch::DigitsMlp, weights, garbage.clone()),
        &store,
        Backend::Canonical,
    )
    .unwrap_err();
    assert!(err.to_string().contains("GCT1"), "{err}");
    // CNN weights given to the MLP.
    let cnn_weights = store
        .put(&cnn::init_params(1).to_safetensors().unwrap())
        .unwrap();
    let input = digits_input(&store, 2);
    let err = run_job(
        &spec(ModelArch::DigitsMlp, cnn_weights, input),
        &store,
        Backend::Cpu,
    )
    .unwrap_err();
    assert!(
        matches!(err, Error::BadWeights(_))
            && err.to_string().contains("missing tensor `fc1.weight`"),
        "{err}"
    );
}

#[test]
fn missing_blobs_and_unknown_architectures_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let absent = BlobRef {
        blake3: [1; 32],
        size: 10,
        urls: vec![],
    };
    let err = run_job(
        &spec(ModelArch::DigitsMlp, absent.clone(), absent),
        &store,
        Backend::Cpu,
    )
    .unwrap_err();
    assert!(err.to_string().contains("not in the local store"), "{err}");
    let json = r#"{"kind":"inference","arch":"resnet50","weights":{"blake3":"00","size":1},"input":{"blake3":"00","size":1},"batch_size":1}"#;
    let err = serde_json::from_str::<JobSpec>(json)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown variant `resnet50`"), "{err}");
}

#[test]
fn a_job_that_cannot_fit_fails_before_loading_anything() {
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let blob = BlobRef {
        blake3: [1; 32],
        size: 1 << 30,
        urls: vec![],
    };
    let shape = LlamaShape {
        vocab_size: 1 << 20,
        hidden_size: 16_384,
        intermediate_size: 65_536,
        num_layers: 256,
        num_heads: 128,
        num_kv_heads: 8,
        max_seq_len: 131_072,
        rope_theta: 500_000,
        rms_norm_eps_ppb: 10_000,
    };
    let job = JobSpec::Inference(InferenceSpec {
        arch: ModelArch::LlamaDecoder,
        weights: blob.clone(),
        tokenizer: None,
        input: blob,
        batch_size: 64,
        llama: Some(shape),
        generation: Some(gpuchain_jobspec::GenerationSpec {
            max_new_tokens: 16,
            sampling: gpuchain_jobspec::Sampling::Greedy,
            stop_tokens: Vec::new(),
        }),
        tolerance: None,
    });
    let err = run_job(&job, &store, Backend::Cpu).unwrap_err();
    assert!(matches!(err, Error::DoesNotFit { .. }), "{err}");
    assert!(err.to_string().contains("does not fit"), "{err}");
}

/// The committed trained weights (`data/models/`, made by `examples/train_digits.rs`) are
/// accurate on the test split, and the burn fast path stays within tolerance of the
/// canonical path on them (the calibration run for the logits tolerance).
#[test]
fn trained_digits_models_are_accurate_and_fast_paths_stay_within_tolerance() {
    use gpuchain_compute::compare::{compare, Metrics};
    let data = gpuchain_compute::digits::Digits::builtin().unwrap();
    let (_, test) = data.split();
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let px: Vec<f32> = test.pixels.iter().map(|v| v * 16.0).collect();
    let input = store.put(&encode_f32(&[test.len(), 64], &px)).unwrap();
    let models = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/models");
    for (arch, file, min_acc) in [
        (ModelArch::DigitsMlp, "digits-mlp.safetensors", 0.95),
        (ModelArch::DigitsCnn, "digits-cnn.safetensors", 0.95),
    ] {
        let weights = store
            .put(&std::fs::read(models.join(file)).unwrap())
            .unwrap();
        let job = spec(arch, weights, input.clone());
        let canon = run_job(&job, &store, Backend::Canonical).unwrap();
        let fast = run_job(&job, &store, Backend::Cpu).unwrap();
        let Tensor::F32 { data: logits, .. } = decode(&canon.bytes).unwrap() else {
            panic!("f32 logits")
        };
        let correct = logits
            .chunks(10)
            .zip(&test.labels)
            .filter(|(l, y)| gpuchain_compute::canonical::math::argmax(l) == usize::from(**y))
            .count();
        let acc = correct as f64 / test.len() as f64;
        let verdict = compare(job.kind(), &job.tolerance(), &fast.bytes, &canon.bytes).unwrap();
        let metrics = match &verdict {
            Verdict::WithinTolerance { metrics } => metrics.clone(),
            Verdict::Identical => Metrics::default(),
            other => panic!("{arch:?}: {other:?}"),
        };
        println!("{arch:?}: test accuracy {acc:.4}; fast vs canonical {metrics:?}");
        assert!(acc >= min_acc, "{arch:?} accuracy {acc}");
    }
}

#[test]
fn local_fit_trains_a_digits_mlp() {
    use gpuchain_compute::models::fit::{fit_digits, FitConfig};
    let data = gpuchain_compute::digits::Digits::builtin().unwrap();
    let (train, test) = data.split();
    let cfg = FitConfig::new().with_epochs(3).with_seed(3);
    let params = fit_digits::<gpuchain_compute::backend::CpuAutodiff>(
        ModelArch::DigitsMlp,
        &train,
        &cfg,
        &Default::default(),
    )
    .unwrap();
    let acc = gpuchain_compute::train::evaluate(&params, &test).unwrap();
    assert!(acc > 0.9, "accuracy after 3 epochs {acc}");
    let err = fit_digits::<gpuchain_compute::backend::CpuAutodiff>(
        ModelArch::MiniLmEmbedder,
        &train,
        &cfg,
        &Default::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("cannot run local digits training"),
        "{err}"
    );
}
