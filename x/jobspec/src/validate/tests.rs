use super::*;
use crate::{GenerationSpec, Sampling, Tolerance, ValueBits};

fn blob(size: u64) -> BlobRef {
    BlobRef {
        blake3: [7; 32],
        size,
        urls: vec!["http://127.0.0.1:1/blob/x".into()],
    }
}

fn mlp() -> JobSpec {
    JobSpec::Inference(InferenceSpec {
        arch: ModelArch::DigitsMlp,
        weights: blob(40_000),
        tokenizer: None,
        input: blob(1_000),
        batch_size: 64,
        llama: None,
        generation: None,
        tolerance: None,
    })
}

fn training() -> TrainingSpec {
    TrainingSpec {
        arch: ModelArch::DigitsMlp,
        init: WeightsInit::Seed(1),
        dataset: blob(57_000),
        workers: 4,
        rounds: 100,
        local_steps: 4,
        batch_size: 32,
        lr_ppm: 50_000,
        momentum_ppm: 0,
        topk_ppm: 10_000,
        value_bits: ValueBits::B16,
        error_feedback: true,
        momentum_correction: false,
        warmup_rounds: 0,
        seed: 9,
        tolerance: None,
        coordinator_url: None,
    }
}

fn check(spec: JobSpec, expect: std::result::Result<(), SpecError>) {
    assert_eq!(spec.validate(), expect, "{spec:?}");
}

#[test]
fn good_specs_pass() {
    check(mlp(), Ok(()));
    check(JobSpec::Training(training()), Ok(()));
}

#[test]
fn bad_blobs_fail() {
    let JobSpec::Inference(mut s) = mlp() else {
        unreachable!()
    };
    s.input.size = 0;
    check(
        JobSpec::Inference(s.clone()),
        Err(SpecError::EmptyBlob("input")),
    );
    s.input.size = MAX_INPUT_BYTES + 1;
    check(
        JobSpec::Inference(s.clone()),
        Err(SpecError::BlobTooLarge {
            role: "input",
            size: MAX_INPUT_BYTES + 1,
            max: MAX_INPUT_BYTES,
        }),
    );
    s.input.size = 10;
    s.input.urls = vec!["ftp://x".into()];
    check(
        JobSpec::Inference(s.clone()),
        Err(SpecError::BadUrl {
            role: "input",
            url: "ftp://x".into(),
        }),
    );
    s.input.urls = vec!["http://a".into(); 9];
    check(
        JobSpec::Inference(s),
        Err(SpecError::TooManyUrls {
            role: "input",
            count: 9,
            max: 8,
        }),
    );
}

#[test]
fn arch_specific_fields_are_enforced() {
    let JobSpec::Inference(mut s) = mlp() else {
        unreachable!()
    };
    s.arch = ModelArch::MiniLmEmbedder;
    check(
        JobSpec::Inference(s.clone()),
        Err(SpecError::MissingBlob {
            arch: ModelArch::MiniLmEmbedder,
            role: "tokenizer",
        }),
    );
    s.arch = ModelArch::DigitsCnn;
    s.generation = Some(GenerationSpec {
        max_new_tokens: 4,
        sampling: Sampling::Greedy,
        stop_tokens: Vec::new(),
    });
    check(
        JobSpec::Inference(s),
        Err(SpecError::NotApplicable {
            field: "generation",
            arch: ModelArch::LlamaDecoder,
        }),
    );
}

#[test]
fn llama_shape_must_be_consistent() {
    let JobSpec::Inference(mut s) = mlp() else {
        unreachable!()
    };
    s.arch = ModelArch::LlamaDecoder;
    s.generation = Some(GenerationSpec {
        max_new_tokens: 4,
        sampling: Sampling::Greedy,
        stop_tokens: Vec::new(),
    });
    let shape = LlamaShape {
        vocab_size: 64,
        hidden_size: 32,
        intermediate_size: 64,
        num_layers: 2,
        num_heads: 4,
        num_kv_heads: 3,
        max_seq_len: 64,
        rope_theta: 10_000,
        rms_norm_eps_ppb: 10_000,
    };
    s.llama = Some(shape.clone());
    check(
        JobSpec::Inference(s.clone()),
        Err(SpecError::BadLlamaShape(
            "num_kv_heads must divide num_heads",
        )),
    );
    s.llama = Some(LlamaShape {
        num_kv_heads: 2,
        ..shape
    });
    check(JobSpec::Inference(s), Ok(()));
}

#[test]
fn training_limits_fail_with_field_names() {
    let mut t = training();
    t.workers = 0;
    check(
        JobSpec::Training(t.clone()),
        Err(SpecError::OutOfRange {
            field: "workers",
            value: 0,
            min: 1,
            max: 64,
        }),
    );
    t.workers = 4;
    t.topk_ppm = 2_000_000;
    check(
        JobSpec::Training(t.clone()),
        Err(SpecError::OutOfRange {
            field: "topk_ppm",
            value: 2_000_000,
            min: 1,
            max: 1_000_000,
        }),
    );
    t.topk_ppm = 10_000;
    t.arch = ModelArch::MiniLmEmbedder;
    check(
        JobSpec::Training(t),
        Err(SpecError::UnsupportedArch {
            arch: ModelArch::MiniLmEmbedder,
            kind: "training",
        }),
    );
}

#[test]
fn fine_tuning_needs_pretrained_weights_and_classifying_needs_a_tokenizer() {
    let mut t = training();
    t.arch = ModelArch::MiniLmClassifier;
    check(
        JobSpec::Training(t.clone()),
        Err(SpecError::NeedsPretrainedWeights {
            arch: ModelArch::MiniLmClassifier,
        }),
    );
    t.init = WeightsInit::Blob(blob(90_868_376));
    check(JobSpec::Training(t), Ok(()));
    let JobSpec::Inference(mut s) = mlp() else {
        unreachable!()
    };
    s.arch = ModelArch::MiniLmClassifier;
    check(
        JobSpec::Inference(s.clone()),
        Err(SpecError::MissingBlob {
            arch: ModelArch::MiniLmClassifier,
            role: "tokenizer",
        }),
    );
    s.tokenizer = Some(blob(466_000));
    check(JobSpec::Inference(s), Ok(()));
}

#[test]
fn json_uses_hex_hashes_and_round_trips() {
    let spec = mlp();
    let json = serde_json::to_string(&spec).unwrap();
    assert!(json.contains(&"07".repeat(32)), "{json}");
    assert!(json.contains("\"kind\":\"inference\""), "{json}");
    let back: JobSpec = serde_json::from_str(&json).unwrap();
    assert_eq!(back, spec);
    let bad = json.replace(&"07".repeat(32), "zz");
    let err = serde_json::from_str::<JobSpec>(&bad)
        .unwrap_err()
        .to_string();
    assert!(err.contains("64 hex characters"), "{err}");
}

#[test]
fn borsh_round_trips() {
    let spec = JobSpec::Training(training());
    let bytes = borsh::to_vec(&spec).unwrap();
    assert_eq!(borsh::from_slice::<JobSpec>(&bytes).unwrap(), spec);
}

#[test]
fn default_tolerance_follows_job_kind() {
    assert_eq!(
        mlp().tolerance(),
        Tolerance::default_for(crate::JobKind::Logits)
    );
    let mut t = training();
    let custom = Tolerance {
        rel_l2_ppm_max: 50_000,
        agreement_ppm_min: 0,
        cosine_ppm_min: 0,
    };
    t.tolerance = Some(custom.clone());
    let spec = JobSpec::Training(t);
    assert_eq!(
        spec.validate(),
        Ok(()),
        "a looser tolerance is the client's choice"
    );
    assert_eq!(spec.tolerance(), custom);
}

#[test]
fn a_tolerance_stricter_than_the_cross_backend_default_is_refused() {
    let floor = Tolerance::default_for(crate::JobKind::Logits);
    let stricter = [
        (
            "rel_l2_ppm_max",
            Tolerance {
                rel_l2_ppm_max: 0,
                ..floor.clone()
            },
        ),
        (
            "rel_l2_ppm_max",
            Tolerance {
                rel_l2_ppm_max: floor.rel_l2_ppm_max - 1,
                ..floor.clone()
            },
        ),
        (
            "agreement_ppm_min",
            Tolerance {
                agreement_ppm_min: 1_000_000,
                ..floor.clone()
            },
        ),
        (
            "cosine_ppm_min",
            Tolerance {
                cosine_ppm_min: 1,
                ..floor.clone()
            },
        ),
    ];
    for (field, tol) in stricter {
        let mut spec = match mlp() {
            JobSpec::Inference(s) => s,
            JobSpec::Training(_) => unreachable!(),
        };
        spec.tolerance = Some(tol);
        let err = JobSpec::Inference(spec).validate().unwrap_err();
        assert!(
            matches!(&err, SpecError::ToleranceTooStrict { field: f, .. } if *f == field),
            "{err}"
        );
        assert!(err.to_string().contains("may not be stricter"), "{err}");
    }
    // Exactly the default is allowed.
    let mut spec = match mlp() {
        JobSpec::Inference(s) => s,
        JobSpec::Training(_) => unreachable!(),
    };
    spec.tolerance = Some(floor);
    assert_eq!(JobSpec::Inference(spec).validate(), Ok(()));
}

#[test]
fn generation_settings_are_bounded() {
    let JobSpec::Inference(mut s) = mlp() else {
        unreachable!()
    };
    s.arch = ModelArch::LlamaGguf;
    let with = |g: GenerationSpec| {
        let mut s = s.clone();
        s.generation = Some(g);
        JobSpec::Inference(s)
    };
    let seeded = |top_p_ppm| Sampling::Seeded {
        seed: 1,
        temperature_milli: 700,
        top_k: 40,
        top_p_ppm,
    };
    let gen = |sampling, stop_tokens| GenerationSpec {
        max_new_tokens: 16,
        sampling,
        stop_tokens,
    };
    check(with(gen(seeded(900_000), vec![2, 7])), Ok(()));
    check(
        with(gen(seeded(0), vec![])),
        Err(SpecError::OutOfRange {
            field: "top_p_ppm",
            value: 0,
            min: 1,
            max: 1_000_000,
        }),
    );
    check(
        with(gen(Sampling::Greedy, (0..17).collect())),
        Err(SpecError::OutOfRange {
            field: "stop_tokens",
            value: 17,
            min: 0,
            max: 16,
        }),
    );
    check(
        with(gen(Sampling::Greedy, vec![1 << 20])),
        Err(SpecError::OutOfRange {
            field: "stop token",
            value: 1 << 20,
            min: 0,
            max: (1 << 20) - 1,
        }),
    );
}
