//! The ways a provider could fake a SmolLM2 generation job, each caught by the verifier's
//! teacher-forced check (`llama::check_generation`), and the honest answer passing, for
//! greedy and for seeded sampling: a smaller model (the same file run on its first 27 of 30
//! layers), a lower-precision model (every weight rounded to 15 levels a row, about 4 bits,
//! which still answers fluently: "Paris is the capital of France and …"),
//! a truncated answer (ended early with end-of-turn tokens), random tokens, the answer to
//! another prompt, and a correct start followed by garbage.
//!
//! Needs the checkpoint, as `compute/tests/smollm2.rs` (fetched with
//! `scripts/fetch-smollm2.sh` when absent).

mod common;

use gpuchain_compute::blob::BlobStore;
use gpuchain_compute::gguf::{self, Gguf};
use gpuchain_compute::llama::{
    check_generation, first_unjustified, first_unjustified_with, Activations, LlamaConfig,
    RowDecoder, TOKEN_MARGIN_PPM,
};
use gpuchain_compute::models::init::SplitMix64;
use gpuchain_compute::params::Params;
use gpuchain_compute::tensor_io::encode_u32;
use gpuchain_compute::Backend;
use gpuchain_jobspec::{GenerationSpec, InferenceSpec, ModelArch, Sampling};

const NEW: usize = 24;

/// Each weight matrix rounded, row by row, to multiples of a seventh of the row's largest
/// magnitude (15 levels).
fn coarse(p: &Params) -> Params {
    let mut out = Params::default();
    for (name, t) in &p.tensors {
        let mut data = t.data.clone();
        if t.dims.len() == 2 {
            for row in data.chunks_mut(t.dims[1]) {
                let step = row.iter().fold(0.0f32, |m, v| m.max(v.abs())) / 7.0;
                if step > 0.0 {
                    row.iter_mut().for_each(|v| *v = (*v / step).round() * step);
                }
            }
        }
        out.insert(name.clone(), t.dims.clone(), data);
    }
    out
}

#[test]
fn every_way_of_faking_a_generation_is_caught_and_the_honest_answer_passes() {
    let bytes = std::fs::read(common::smollm2_file()).unwrap();
    let g = Gguf::parse(&bytes).unwrap();
    let tok = gguf::tokenizer::tokenizer(&g).unwrap();
    let shape = gguf::llama::shape(&g).unwrap();
    let cfg = gguf::llama::config(&g).unwrap();
    let eos = g
        .get("tokenizer.ggml.eos_token_id")
        .and_then(gguf::Value::as_u64)
        .unwrap() as u32;
    let honest_model = RowDecoder::new(
        cfg.clone(),
        &gguf::llama::GgufWeights::new(&g, &shape).unwrap(),
    )
    .unwrap();
    let shallow = RowDecoder::new(
        LlamaConfig {
            layers: 27,
            ..cfg.clone()
        },
        &gguf::llama::GgufWeights::new(&g, &shape).unwrap(),
    )
    .unwrap();
    let params = gguf::llama::params(&g, &shape).unwrap();
    let low_precision = RowDecoder::new(cfg, &coarse(&params)).unwrap();
    drop(params);
    let ids = |q: &str| {
        let prompt = gguf::ChatTemplate::of(&g)
            .unwrap()
            .prompt(&[("user", q)])
            .unwrap();
        tok.encode(prompt.as_str(), false)
            .unwrap()
            .get_ids()
            .to_vec()
    };
    let prompt = ids("What is the capital of France?");
    let other = ids("Who wrote Romeo and Juliet?");

    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let weights = store.put(&bytes).unwrap();
    let input = store.put(&encode_u32(&[1, prompt.len()], &prompt)).unwrap();
    for sampling in [
        Sampling::Greedy,
        Sampling::Seeded {
            seed: 7,
            temperature_milli: 700,
            top_k: 40,
            top_p_ppm: 1_000_000,
        },
    ] {
        let spec = InferenceSpec {
            arch: ModelArch::LlamaGguf,
            weights: weights.clone(),
            tokenizer: None,
            input: input.clone(),
            batch_size: 1,
            llama: None,
            generation: Some(GenerationSpec {
                max_new_tokens: NEW as u32,
                sampling: sampling.clone(),
                stop_tokens: Vec::new(),
            }),
            tolerance: None,
        };
        let accepted = |tokens: &[u32]| {
            check_generation(&spec, &store, Backend::Cpu, &encode_u32(&[1, NEW], tokens))
                .unwrap()
                .accepted()
        };
        let honest = honest_model.generate(&prompt, 1, NEW, &sampling);
        println!("{sampling:?}: {:?}", tok.decode(&honest, false).unwrap());
        assert!(accepted(&honest), "{sampling:?}: the honest answer passes");

        let mut rng = SplitMix64::new(99);
        let random: Vec<u32> = (0..NEW)
            .map(|_| (rng.next_u64() % u64::from(shape.vocab_size)) as u32)
            .collect();
        let mut truncated = honest[..4].to_vec();
        truncated.resize(NEW, eos);
        let mut garbage_tail = honest[..8].to_vec();
        garbage_tail.extend_from_slice(&random[8..]);
        let fakes = [
            (
                "a smaller model",
                shallow.generate(&prompt, 1, NEW, &sampling),
            ),
            (
                "a lower-precision model",
                low_precision.generate(&prompt, 1, NEW, &sampling),
            ),
            ("a truncated answer", truncated),
            ("random tokens", random),
            (
                "another prompt's answer",
                honest_model.generate(&other, 1, NEW, &sampling),
            ),
            ("a correct start, then garbage", garbage_tail),
        ];
        for (what, tokens) in fakes {
            assert_ne!(
                tokens, honest,
                "{sampling:?}: {what} differs from the honest answer"
            );
            println!("  {what}: {:?}", tok.decode(&tokens, false).unwrap());
            assert!(!accepted(&tokens), "{sampling:?}: {what} is caught");
        }
    }
}

/// The check's fast pass (8-bit activations, where the CPU has integer dot products) sits
/// one activation rounding from the f32 logits an answer was picked from, so a token near an
/// edge of what the margin allows can be justified by the one and faulted by the other. The
/// f32 pass confirms every fault: such an answer is accepted, and a token both passes fault
/// is faulted. The case is built from an honest greedy answer to a chat question: its
/// tokens up to the first position where some token lies within the margin in f32 and
/// outside it in the fast pass, then that token.
#[test]
fn a_fault_of_the_fast_pass_stands_only_if_the_f32_pass_finds_it() {
    let bytes = std::fs::read(common::smollm2_file()).unwrap();
    let g = Gguf::parse(&bytes).unwrap();
    let tok = gguf::tokenizer::tokenizer(&g).unwrap();
    let decoder = gguf::llama::row_decoder(&g).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let model = store.put(&bytes).unwrap();
    let questions: Vec<String> =
        serde_json::from_str(include_str!("../../data/gguf/chat-questions.json")).unwrap();
    let verdicts = |ids: &[u32], tokens: &[u32]| {
        let spec = InferenceSpec {
            arch: ModelArch::LlamaGguf,
            weights: model.clone(),
            tokenizer: None,
            input: store.put(&encode_u32(&[1, ids.len()], ids)).unwrap(),
            batch_size: 1,
            llama: None,
            generation: Some(GenerationSpec {
                max_new_tokens: tokens.len() as u32,
                sampling: Sampling::Greedy,
                stop_tokens: Vec::new(),
            }),
            tolerance: None,
        };
        let job = encode_u32(&[1, tokens.len()], tokens);
        (
            first_unjustified_with(&decoder, ids, tokens, &Sampling::Greedy, Activations::Int8),
            first_unjustified(&decoder, ids, tokens, &Sampling::Greedy),
            check_generation(&spec, &store, Backend::Cpu, &job)
                .unwrap()
                .accepted(),
        )
    };
    // As the check judges a greedy pick: within the margin of the top logit.
    let margin = TOKEN_MARGIN_PPM as f32 / 1e6;
    let within = |l: &[f32], v: usize| {
        let top = l.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let low = l.iter().copied().fold(f32::INFINITY, f32::min);
        top - l[v] <= (top - low) * margin
    };
    let mut found = None;
    'questions: for q in &questions {
        let prompt = gguf::ChatTemplate::of(&g)
            .unwrap()
            .prompt(&[("user", q.as_str())])
            .unwrap();
        let ids = tok
            .encode(prompt.as_str(), false)
            .unwrap()
            .get_ids()
            .to_vec();
        let honest = decoder.generate(&ids, 1, 16, &Sampling::Greedy);
        let exact = decoder.teacher_forced_logits_with(&ids, &honest, Activations::F32);
        let fast = decoder.teacher_forced_logits_with(&ids, &honest, Activations::Int8);
        for (j, (e, f)) in exact.iter().zip(&fast).enumerate() {
            if let Some(v) = (0..e.len()).find(|&v| within(e, v) && !within(f, v)) {
                let least = (0..e.len()).min_by(|&a, &b| e[a].total_cmp(&e[b])).unwrap();
                found = Some((ids, [&honest[..j], &[v as u32]].concat(), least as u32));
                break 'questions;
            }
        }
    }
    if gpuchain_kernels::int8_products_fast() {
        let (ids, claimed, least) =
            found.expect("a token the f32 pass justifies and the fast pass does not");
        let at = claimed.len() - 1;
        let (fast, checked, accepted) = verdicts(&ids, &claimed);
        assert_eq!((fast, checked, accepted), (Some(at), None, true));
        // The same answer with that token swapped for the model's least likely one: both
        // passes fault it.
        let mut fake = claimed.clone();
        fake[at] = least;
        let (fast, checked, accepted) = verdicts(&ids, &fake);
        assert_eq!((fast, checked, accepted), (Some(at), Some(at), false));
    } else {
        // Without integer dot products both passes are the same f32 products.
        assert!(found.is_none());
    }
}
