//! The Llama-style decoder on a tiny checkpoint that the test creates and saves.

use gpuchain_compute::blob::BlobStore;
use gpuchain_compute::llama::{
    check_generation, generate, generate_at, random_params, LlamaConfig, PrefixCache, RowDecoder,
};
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
            top_p_ppm: 1_000_000,
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
            top_p_ppm: 1_000_000,
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
            top_p_ppm: 1_000_000,
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
    let mut s = job(&store, Sampling::Greedy);
    s.input = store
        .put(&encode_u32(
            &[3, 4],
            &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
        ))
        .unwrap();
    s.generation = Some(GenerationSpec {
        max_new_tokens: 5,
        sampling: Sampling::Greedy,
        stop_tokens: Vec::new(),
    });
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
    let err = run_job(&JobSpec::Inference(s.clone()), &store, Backend::Cpu)
        .unwrap_err()
        .to_string();
    assert!(err.contains("exceed max_seq_len"), "{err}");
    // Text needs a tokenizer, which only a GGUF file brings.
    s.input = store.put(br#"["Once upon a time"]"#).unwrap();
    let err = run_job(&JobSpec::Inference(s), &store, Backend::Cpu)
        .unwrap_err()
        .to_string();
    assert!(err.contains("text prompts need a GGUF model"), "{err}");
}

#[test]
fn prompts_of_different_lengths_each_sample_the_stream_of_their_place_in_the_batch() {
    let cfg = LlamaConfig::from_shape(&shape());
    let params = random_params(&cfg, 5);
    let device = Default::default();
    let model = cfg.load::<B>(&params, &device).unwrap();
    let rows = RowDecoder::new(cfg, &params).unwrap();
    let (short, long): (&[u32], &[u32]) = (&[3, 8, 13], &[1, 5, 9, 2, 40, 41]);
    let sampling = Sampling::Seeded {
        seed: 7,
        temperature_milli: 900,
        top_k: 20,
        top_p_ppm: 1_000_000,
    };
    let both = rows.generate_rows(&[short, long], 10, &sampling, &[]);
    // burn's decoder takes one prompt length at a time, each row at its place in the batch.
    let alone = |prompt: &[u32], place: usize| {
        generate_at(&model, prompt, &[place], 10, &sampling, true, &device)
    };
    assert_eq!(both[..10], alone(short, 0)[..]);
    assert_eq!(both[10..], alone(long, 1)[..]);
    assert_ne!(
        both[10..],
        alone(long, 0)[..],
        "another place in the batch draws another stream"
    );
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

// Checking generated tokens by teacher forcing: honest outputs pass whatever the sampling;
// an ungenerated tail, an ungenerated row, a swapped token or a missing row fail.

/// A decoder job of 5 prompts of 4 tokens, 20 new tokens each, batches of 2.
fn job(store: &BlobStore, sampling: Sampling) -> InferenceSpec {
    let cfg = LlamaConfig::from_shape(&shape());
    let weights = store
        .put(&random_params(&cfg, 4).to_safetensors().unwrap())
        .unwrap();
    let prompts: Vec<u32> = (0..20).map(|i| (i * 7 + 3) % 97).collect();
    let input = store.put(&encode_u32(&[5, 4], &prompts)).unwrap();
    InferenceSpec {
        arch: ModelArch::LlamaDecoder,
        weights,
        tokenizer: None,
        input,
        batch_size: 2,
        llama: Some(shape()),
        generation: Some(GenerationSpec {
            max_new_tokens: 20,
            sampling,
            stop_tokens: Vec::new(),
        }),
        tolerance: None,
    }
}

fn tokens(bytes: &[u8]) -> Vec<u32> {
    match decode(bytes).unwrap() {
        Tensor::U32 { data, .. } => data,
        other => panic!("{other:?}"),
    }
}

fn passes(s: &InferenceSpec, store: &BlobStore, out: &[u32], dims: [usize; 2]) -> bool {
    check_generation(s, store, Backend::Cpu, &encode_u32(&dims, out))
        .unwrap()
        .accepted()
}

#[test]
fn honest_generations_pass_and_ungenerated_or_swapped_tokens_fail() {
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    for sampling in [
        Sampling::Greedy,
        Sampling::Seeded {
            seed: 9,
            temperature_milli: 900,
            top_k: 20,
            top_p_ppm: 1_000_000,
        },
    ] {
        let s = job(&store, sampling.clone());
        let out = run_job(&JobSpec::Inference(s.clone()), &store, Backend::Cpu).unwrap();
        let honest = tokens(&out.bytes);
        assert!(
            passes(&s, &store, &honest, [5, 20]),
            "{sampling:?}: the honest output"
        );
        let canonical =
            run_job(&JobSpec::Inference(s.clone()), &store, Backend::Canonical).unwrap();
        assert!(passes(&s, &store, &tokens(&canonical.bytes), [5, 20]));

        // The last token of every row left ungenerated (5%): some row's model would not
        // have produced a 0 there.
        let mut tail = honest.clone();
        for row in 0..5 {
            tail[row * 20 + 19] = (honest[row * 20 + 19] + 1) % 97;
        }
        assert!(
            !passes(&s, &store, &tail, [5, 20]),
            "{sampling:?}: a faked tail"
        );

        // One row of five never generated.
        let mut row = honest.clone();
        for t in &mut row[40..60] {
            *t = 0;
        }
        assert!(
            !passes(&s, &store, &row, [5, 20]),
            "{sampling:?}: a faked row"
        );

        // One token swapped for the least likely one.
        let mut swapped = honest.clone();
        swapped[7] = (honest[7] + 48) % 97;
        assert!(
            !passes(&s, &store, &swapped, [5, 20]),
            "{sampling:?}: a swap"
        );

        // Incomplete: four rows of five, or 19 tokens a row.
        assert!(!passes(&s, &store, &honest[..80], [4, 20]));
        let short: Vec<u32> = honest.chunks(20).flat_map(|r| r[..19].to_vec()).collect();
        assert!(!passes(&s, &store, &short, [5, 19]));
    }
}

#[test]
fn a_flip_on_a_near_tie_is_judged_on_its_own_prefix() {
    // Another backend may pick the runner-up where two logits nearly tie; every later token
    // then follows from that prefix. Teacher forcing judges each token on the candidate's
    // own prefix: a continuation regenerated after a flip at step 3 passes if step 3 is
    // within the margin, and is refused when it is not.
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let s = job(&store, Sampling::Greedy);
    let out = run_job(&JobSpec::Inference(s.clone()), &store, Backend::Cpu).unwrap();
    let honest = tokens(&out.bytes);
    // Force row 0 to take another token at step 3, then let the model continue from there:
    // the continuation is what the model generates after that prefix.
    let mut forced = s.clone();
    let mut prompt: Vec<u32> = (0..4).map(|i| (i * 7 + 3) % 97).collect();
    prompt.extend_from_slice(&honest[..3]);
    let other = (honest[3] + 1) % 97;
    prompt.push(other);
    forced.input = store.put(&encode_u32(&[1, 8], &prompt)).unwrap();
    forced.generation = Some(GenerationSpec {
        max_new_tokens: 16,
        sampling: Sampling::Greedy,
        stop_tokens: Vec::new(),
    });
    let rest = tokens(
        &run_job(&JobSpec::Inference(forced), &store, Backend::Cpu)
            .unwrap()
            .bytes,
    );
    let mut flipped = honest.clone();
    flipped[3] = other;
    flipped[4..20].copy_from_slice(&rest);
    // The forced token is not a near-tie (the model favoured another by far): refused, and
    // only that one position of 100 is unjustified.
    let verdict =
        check_generation(&s, &store, Backend::Cpu, &encode_u32(&[5, 20], &flipped)).unwrap();
    assert!(!verdict.accepted());
    let text = format!("{verdict:?}");
    assert!(
        text.contains("row 0, token 3") && text.contains("99 of 100"),
        "{text}"
    );
}

#[test]
fn the_row_decoder_picks_the_same_tokens_as_the_burn_decoder() {
    let cfg = LlamaConfig::from_shape(&shape());
    let params = random_params(&cfg, 11);
    let device = Default::default();
    let model = cfg.load::<B>(&params, &device).unwrap();
    let rows = gpuchain_compute::llama::RowDecoder::new(cfg, &params).unwrap();
    let prompts: Vec<u32> = vec![1, 5, 9, 2, 40, 41, 42, 43, 7, 7, 7, 7];
    for sampling in [
        Sampling::Greedy,
        Sampling::Seeded {
            seed: 3,
            temperature_milli: 800,
            top_k: 10,
            top_p_ppm: 1_000_000,
        },
    ] {
        let burn = generate(&model, &prompts, 3, 12, &sampling, true, &device);
        assert_eq!(
            rows.generate(&prompts, 3, 12, &sampling),
            burn,
            "{sampling:?}"
        );
        // Streamed a token at a time, row 1 gives the same tokens as in the batch.
        let mut seq = rows.start(&prompts[4..8], &sampling, 1);
        let streamed: Vec<u32> = (0..12).map(|_| seq.next_token().unwrap()).collect();
        assert_eq!(streamed, burn[12..24], "{sampling:?}, streamed");
        assert_eq!(
            seq.len(),
            4 + 11,
            "the last token is fed only when another is asked for"
        );
    }
}

#[test]
fn sequences_stepped_together_joining_and_leaving_give_what_each_gives_alone() {
    let cfg = LlamaConfig::from_shape(&shape());
    let params = random_params(&cfg, 11);
    let rows = gpuchain_compute::llama::RowDecoder::new(cfg, &params).unwrap();
    let sampling = Sampling::Seeded {
        seed: 9,
        temperature_milli: 900,
        top_k: 20,
        top_p_ppm: 900_000,
    };
    // Prompts of different lengths, some longer than the prompt chunk, arriving at
    // different steps and asking for different numbers of tokens.
    let prompts: [Vec<u32>; 4] = [
        vec![1, 5, 9],
        (0..11).map(|i| (i * 7 + 3) % 97).collect(),
        vec![40],
        (0..6).map(|i| i * 13 % 97).collect(),
    ];
    let wanted = [9usize, 5, 12, 7];
    let joins = [0usize, 0, 2, 5];
    let alone: Vec<Vec<u32>> = prompts
        .iter()
        .zip(wanted)
        .enumerate()
        .map(|(row, (p, n))| {
            let mut seq = rows.start(p, &sampling, row);
            (0..n).map(|_| seq.next_token().unwrap()).collect()
        })
        .collect();
    let mut seqs: Vec<_> = prompts
        .iter()
        .enumerate()
        .map(|(row, p)| rows.start(p, &sampling, row))
        .collect();
    let mut got: Vec<Vec<u32>> = vec![Vec::new(); prompts.len()];
    let mut step = 0;
    while got.iter().zip(wanted).any(|(g, n)| g.len() < n) {
        let live: Vec<usize> = (0..seqs.len())
            .filter(|&i| joins[i] <= step && got[i].len() < wanted[i])
            .collect();
        let mut stepped: Vec<&mut gpuchain_compute::llama::Sequence<'_>> = seqs
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| live.contains(i))
            .map(|(_, s)| s)
            .collect();
        let next = gpuchain_compute::llama::Sequence::step(&mut stepped, 4);
        for (&i, token) in live.iter().zip(next) {
            got[i].extend(token);
        }
        step += 1;
        assert!(step < 100, "every sequence makes progress");
    }
    assert_eq!(got, alone);
    // A prompt of 11 tokens read 4 at a time gives its first token at its third step.
    let mut long = rows.start(&prompts[1], &sampling, 1);
    let firsts: Vec<Option<u32>> = (0..3)
        .map(|_| gpuchain_compute::llama::Sequence::step(&mut [&mut long], 4)[0])
        .collect();
    assert_eq!(firsts, [None, None, Some(alone[1][0])]);
    assert!(rows.start(&[], &sampling, 0).next_token().is_none());
}

#[test]
fn rows_end_at_their_stop_token_and_a_row_that_goes_on_fails() {
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let sampling = Sampling::Seeded {
        seed: 5,
        temperature_milli: 1500,
        top_k: 97,
        top_p_ppm: 1_000_000,
    };
    let free = tokens(
        &run_job(
            &JobSpec::Inference(job(&store, sampling.clone())),
            &store,
            Backend::Cpu,
        )
        .unwrap()
        .bytes,
    );
    // Stop at a token that some row generates midway: the one at row 1, step 6.
    let stop = free[20 + 6];
    let mut s = job(&store, sampling);
    s.generation.as_mut().unwrap().stop_tokens = vec![stop];
    let out = tokens(
        &run_job(&JobSpec::Inference(s.clone()), &store, Backend::Cpu)
            .unwrap()
            .bytes,
    );
    for (r, (row, free)) in out.chunks(20).zip(free.chunks(20)).enumerate() {
        let end = free.iter().position(|t| *t == stop).map_or(20, |p| p + 1);
        assert_eq!(&row[..end], &free[..end], "row {r} up to its stop");
        assert!(row[end..].iter().all(|t| *t == stop), "row {r} repeats it");
    }
    assert!(out[20 + 7..40].iter().all(|t| *t == stop));
    assert!(
        passes(&s, &store, &out, [5, 20]),
        "the stopped output passes"
    );
    // The burn decoder's output, ended the same way, is the same.
    let canonical = run_job(&JobSpec::Inference(s.clone()), &store, Backend::Canonical).unwrap();
    assert_eq!(tokens(&canonical.bytes), out);

    // A row that goes on after its stop token (with what the model would have said).
    let mut goes_on = out.clone();
    goes_on[20 + 7..40].copy_from_slice(&free[20 + 7..40]);
    assert!(!passes(&s, &store, &goes_on, [5, 20]));
    // A row stopped early with a stop token the model did not pick.
    let mut cut = out.clone();
    for t in &mut cut[2..20] {
        *t = stop;
    }
    assert_ne!(cut, out);
    assert!(!passes(&s, &store, &cut, [5, 20]));
}

#[test]
fn nucleus_sampling_is_replayed_by_the_check_and_a_wider_nucleus_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let nucleus = |top_p_ppm| Sampling::Seeded {
        seed: 21,
        temperature_milli: 1200,
        top_k: 97,
        top_p_ppm,
    };
    let s = job(&store, nucleus(300_000));
    let out = run_job(&JobSpec::Inference(s.clone()), &store, Backend::Cpu).unwrap();
    let honest = tokens(&out.bytes);
    assert!(passes(&s, &store, &honest, [5, 20]));
    let canonical = run_job(&JobSpec::Inference(s.clone()), &store, Backend::Canonical).unwrap();
    assert!(passes(&s, &store, &tokens(&canonical.bytes), [5, 20]));
    // Sampling from the whole top-k instead (what the order did not ask for) is caught.
    let wide = job(&store, nucleus(1_000_000));
    let wider = tokens(
        &run_job(&JobSpec::Inference(wide), &store, Backend::Cpu)
            .unwrap()
            .bytes,
    );
    assert_ne!(wider, honest);
    assert!(!passes(&s, &store, &wider, [5, 20]));
}

/// `x` as a GPU's tensor cores read an f32 in a TF32 product: 10 mantissa bits, rounded to
/// nearest.
fn tf32(x: f32) -> f32 {
    f32::from_bits(x.to_bits().wrapping_add(0x1000) & !0x1fff)
}

/// burn's decoder (the code CUDA jobs run, here on the CPU backend) generating eight rows
/// at once from the checked-in checkpoint, greedy and seeded, with its weights exact and as
/// TF32 products read them (burn-cuda's f32 matmuls run on TF32 tensor cores): the
/// verifier's row-decoder check, on the exact weights, accepts every row.
#[test]
fn burns_batched_generations_pass_the_row_decoder_check() {
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let bytes = std::fs::read(
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../data/llama/tiny-llama.safetensors"),
    )
    .unwrap();
    let params = Params::from_safetensors(&bytes).unwrap();
    let mut rounded = params.clone();
    for t in rounded.tensors.values_mut() {
        t.data.iter_mut().for_each(|x| *x = tf32(*x));
    }
    assert_ne!(rounded, params);
    let cfg = LlamaConfig::from_shape(&shape());
    let device = Default::default();
    let models = [
        cfg.load::<B>(&params, &device).unwrap(),
        cfg.load::<B>(&rounded, &device).unwrap(),
    ];
    let prompts: Vec<u32> = (0..8u32)
        .flat_map(|r| (0..6).map(move |i| (r * 11 + i * 7) % 97))
        .collect();
    let input = store.put(&encode_u32(&[8, 6], &prompts)).unwrap();
    let weights = store.put(&bytes).unwrap();
    let mut samplings = vec![Sampling::Greedy];
    samplings.extend((0..32).map(|seed| Sampling::Seeded {
        seed,
        temperature_milli: 700,
        top_k: 40,
        top_p_ppm: 1_000_000,
    }));
    for sampling in samplings {
        let spec = InferenceSpec {
            arch: ModelArch::LlamaDecoder,
            weights: weights.clone(),
            tokenizer: None,
            input: input.clone(),
            batch_size: 64,
            llama: Some(shape()),
            generation: Some(GenerationSpec {
                max_new_tokens: 24,
                sampling: sampling.clone(),
                stop_tokens: Vec::new(),
            }),
            tolerance: None,
        };
        for (model, weights) in models.iter().zip(["exact", "TF32"]) {
            let out = generate(model, &prompts, 8, 24, &sampling, true, &device);
            let verdict =
                check_generation(&spec, &store, Backend::Cpu, &encode_u32(&[8, 24], &out)).unwrap();
            assert!(
                verdict.accepted(),
                "{weights} weights, {sampling:?}: {verdict:?}"
            );
        }
    }
}

#[test]
fn a_prompt_beginning_like_an_earlier_one_starts_from_its_keys_and_values() {
    let cfg = LlamaConfig::from_shape(&shape());
    let rows = RowDecoder::new(cfg.clone(), &random_params(&cfg, 17)).unwrap();
    let greedy = Sampling::Greedy;
    let system: Vec<u32> = (1..=12).collect();
    let first = [system.as_slice(), &[40, 41, 42]].concat();
    let second = [system.as_slice(), &[50, 51]].concat();
    let answer = |prompt: &[u32], prefixes: &mut PrefixCache| {
        let mut seq = rows.start(prompt, &greedy, 0);
        let reused = seq.reuse_prefix(prefixes);
        let tokens: Vec<u32> = (0..8).map(|_| seq.next_token().unwrap()).collect();
        seq.share_prompt(prefixes);
        (reused, tokens)
    };
    let mut prefixes = PrefixCache::new(1 << 20);
    let (reused, first_answer) = answer(&first, &mut prefixes);
    assert_eq!(reused, 0, "nothing held yet");
    assert_eq!(first_answer, rows.generate(&first, 1, 8, &greedy));
    // The shared beginning is not read again, and the answer is the one read whole.
    let (reused, second_answer) = answer(&second, &mut prefixes);
    assert_eq!(reused, system.len());
    assert_eq!(second_answer, rows.generate(&second, 1, 8, &greedy));
    // The same prompt again: all of it but the last token, which gives the first logits.
    assert_eq!(
        answer(&first, &mut prefixes),
        (first.len() - 1, first_answer)
    );
    assert_eq!(prefixes.reused_tokens(), (2 * system.len() + 2) as u64);
    // Fewer than eight shared tokens are read again.
    let short = [&system[..5], &[60, 61, 62, 63, 64]].concat();
    assert_eq!(answer(&short, &mut prefixes).0, 0);

    // Under a budget of one prompt, the least recently used goes first.
    let other: Vec<u32> = (30..46).collect();
    let mut one = PrefixCache::new(6 * 1024);
    answer(&first, &mut one);
    let held = one.held_bytes();
    assert!(held > 0 && held < 6 * 1024, "{held}");
    answer(&other, &mut one);
    assert!(one.held_bytes() <= 6 * 1024);
    assert_eq!(
        answer(&[other.as_slice(), &[7]].concat(), &mut one).0,
        other.len()
    );
    assert_eq!(answer(&first, &mut one).0, 0, "let go of to make room");
    // A budget of 0 keeps nothing.
    let mut none = PrefixCache::new(0);
    answer(&first, &mut none);
    assert_eq!((none.held_bytes(), answer(&first, &mut none).0), (0, 0));
}
