//! The Llama-style decoder on a tiny checkpoint that the test creates and saves.

use gpuchain_compute::blob::BlobStore;
use gpuchain_compute::llama::{generate, random_params, LlamaConfig};
use gpuchain_compute::params::Params;
use gpuchain_compute::tensor_io::{decode, encode_u32, Tensor};
use gpuchain_compute::{run_job, Backend};
use gpuchain_jobspec::{GenerationSpec, InferenceSpec, JobSpec, LlamaShape, ModelArch, Sampling};

type B = gpuchain_compute::backend::CpuBackend;

fn shape() -> LlamaShape {
    LlamaShape {
        vocab_size: 97,
        hidden_size: 32,
        intermediate_size: 64,
        num_layers: 2,
        num_heads: 4,
        num_kv_heads: 2,
        max_seq_len: 64,
        rope_theta: 10_000,
        rms_norm_eps_ppb: 10_000,
    }
}

#[test]
fn checkpoint_round_trips_and_kv_cache_gives_the_same_tokens() {
    let cfg = LlamaConfig::from_shape(&shape());
    let params = random_params(&cfg, 11);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny-llama.safetensors");
    std::fs::write(&path, params.to_safetensors().unwrap()).unwrap();
    let loaded = Params::from_safetensors(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(loaded, params);

    let device = Default::default();
    let model = cfg.load::<B>(&loaded, &device).unwrap();
    let prompts: Vec<u32> = vec![1, 5, 9, 2, 40, 41, 42, 43];
    for sampling in [
        Sampling::Greedy,
        Sampling::Seeded {
            seed: 3,
            temperature_milli: 800,
            top_k: 10,
        },
    ] {
        let cached = generate(&model, &prompts, 2, 12, &sampling, true, &device);
        let uncached = generate(&model, &prompts, 2, 12, &sampling, false, &device);
        assert_eq!(cached.len(), 24);
        assert_eq!(cached, uncached, "{sampling:?}");
        assert!(cached.iter().all(|t| *t < 97));
    }
    let a = generate(
        &model,
        &prompts,
        2,
        12,
        &Sampling::Seeded {
            seed: 1,
            temperature_milli: 2000,
            top_k: 50,
        },
        true,
        &device,
    );
    let b = generate(
        &model,
        &prompts,
        2,
        12,
        &Sampling::Seeded {
            seed: 2,
            temperature_milli: 2000,
            top_k: 50,
        },
        true,
        &device,
    );
    assert_ne!(a, b, "different seeds sample different tokens");
    // A checkpoint with tied embeddings (no `lm_head.weight`) uses the embedding matrix.
    let mut tied = loaded.clone();
    tied.tensors.remove("lm_head.weight");
    let tied_model = cfg.load::<B>(&tied, &device).unwrap();
    let mut as_head = loaded.clone();
    let embed = loaded.tensors["model.embed_tokens.weight"].clone();
    as_head.tensors.insert("lm_head.weight".into(), embed);
    let explicit = cfg.load::<B>(&as_head, &device).unwrap();
    assert_eq!(
        generate(
            &tied_model,
            &prompts,
            2,
            6,
            &Sampling::Greedy,
            true,
            &device
        ),
        generate(&explicit, &prompts, 2, 6, &Sampling::Greedy, true, &device)
    );
    // Loading with a wrong shape fails clearly.
    let mut wrong = shape();
    wrong.hidden_size = 48;
    wrong.num_heads = 4;
    let err = LlamaConfig::from_shape(&wrong)
        .load::<B>(&loaded, &device)
        .unwrap_err()
        .to_string();
    assert!(err.contains("has shape"), "{err}");
}

#[test]
fn generation_job_runs_and_rejects_bad_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let cfg = LlamaConfig::from_shape(&shape());
    let weights = store
        .put(&random_params(&cfg, 4).to_safetensors().unwrap())
        .unwrap();
    let input = store
        .put(&encode_u32(
            &[3, 4],
            &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
        ))
        .unwrap();
    let mut s = InferenceSpec {
        arch: ModelArch::LlamaDecoder,
        weights,
        tokenizer: None,
        input,
        batch_size: 2,
        llama: Some(shape()),
        generation: Some(GenerationSpec {
            max_new_tokens: 5,
            sampling: Sampling::Greedy,
        }),
        tolerance: None,
    };
    let out = run_job(&JobSpec::Inference(s.clone()), &store, Backend::Cpu).unwrap();
    match decode(&out.bytes).unwrap() {
        Tensor::U32 { dims, .. } => assert_eq!(dims, vec![3, 5]),
        other => panic!("{other:?}"),
    }
    s.input = store.put(&encode_u32(&[1, 2], &[1, 500])).unwrap();
    let err = run_job(&JobSpec::Inference(s.clone()), &store, Backend::Cpu)
        .unwrap_err()
        .to_string();
    assert!(err.contains("outside the vocabulary"), "{err}");
    s.input = store.put(&encode_u32(&[1, 62], &[1; 62])).unwrap();
    let err = run_job(&JobSpec::Inference(s), &store, Backend::Cpu)
        .unwrap_err()
        .to_string();
    assert!(err.contains("exceed max_seq_len"), "{err}");
}

/// The decoder against HuggingFace transformers' `LlamaForCausalLM` on a tiny random
/// checkpoint (`data/llama/`, made by `scripts/gen-llama-reference.py`): same logits, same
/// greedy tokens. This pins the RoPE layout, grouped-query attention, SwiGLU and RMSNorm.
#[test]
fn decoder_matches_transformers_llama() {
    use burn::prelude::*;
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/llama");
    let reference: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("tiny-llama-reference.json")).unwrap(),
    )
    .unwrap();
    let params =
        Params::from_safetensors(&std::fs::read(dir.join("tiny-llama.safetensors")).unwrap())
            .unwrap();
    let prompts: Vec<Vec<u32>> = serde_json::from_value(reference["prompts"].clone()).unwrap();
    let want_logits: Vec<Vec<Vec<f32>>> =
        serde_json::from_value(reference["prompt_logits"].clone()).unwrap();
    let want_tokens: Vec<Vec<u32>> =
        serde_json::from_value(reference["greedy_tokens"].clone()).unwrap();
    let cfg = LlamaConfig::from_shape(&LlamaShape {
        max_seq_len: 64,
        rms_norm_eps_ppb: 10_000,
        ..shape()
    });
    let device = Default::default();
    let model = cfg.load::<B>(&params, &device).unwrap();
    let (rows, len) = (prompts.len(), prompts[0].len());
    let flat: Vec<u32> = prompts.concat();
    let ids = Tensor::<B, 2, Int>::from_data(
        TensorData::new(
            flat.iter().map(|t| i64::from(*t)).collect::<Vec<_>>(),
            [rows, len],
        ),
        &device,
    );
    let got = gpuchain_compute::models::burn_io::values(model.forward(ids, 0, None));
    let want: Vec<f32> = want_logits.concat().concat();
    let rel = gpuchain_compute::compare::rel_l2_ppm(&got, &want);
    println!("logits vs transformers: rel-L2 {rel} ppm");
    assert!(rel < 100, "logits differ from transformers: {rel} ppm");
    let tokens = generate(
        &model,
        &flat,
        rows,
        want_tokens[0].len(),
        &Sampling::Greedy,
        true,
        &device,
    );
    assert_eq!(tokens, want_tokens.concat());
}
