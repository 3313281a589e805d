//! How far honest SmolLM2 generations sit from the verifier's tolerance: generations from
//! two builds of the row decoder's loops (AVX2+FMA and the baseline x86-64 build, which round
//! differently) and from burn's decoder, each checked by the verifier's default path (the
//! row decoder with the widest build the CPU runs), for greedy and seeded sampling. Prints
//! the count of honest generations faulted (must be 0), how many of them the check's fast
//! pass alone (8-bit activations where the CPU has integer dot products) would have faulted
//! before its pass in f32 cleared them, and, for greedy answers, the largest gap between a
//! claimed token's logit and the top logit in each pass, as a share of the margin the check
//! allows. Thread counts cannot change results: each product's value for a token is summed
//! in one order on one thread.
//!
//! `generation_calibration FILE.gguf [SEEDS_PER_QUESTION] [BURN_GENERATIONS]`

use std::path::Path;

use gpuchain_compute::backend::CpuBackend;
use gpuchain_compute::blob::BlobStore;
use gpuchain_compute::gguf::{self, Gguf};
use gpuchain_compute::llama::{
    check_generation, first_unjustified_with, generate, Activations, RowDecoder, TOKEN_MARGIN_PPM,
};
use gpuchain_compute::tensor_io::encode_u32;
use gpuchain_compute::Backend;
use gpuchain_jobspec::{GenerationSpec, InferenceSpec, ModelArch, Sampling};

const NEW: usize = 16;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let file = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: FILE.gguf [SEEDS] [BURN]"))?;
    let seeds: u64 = args.next().map_or(Ok(24), |n| n.parse())?;
    let burn_runs: usize = args.next().map_or(Ok(10), |n| n.parse())?;
    let bytes = std::fs::read(&file)?;
    let g = Gguf::parse(&bytes)?;
    let tok = gguf::tokenizer::tokenizer(&g)?;
    let shape = gguf::llama::shape(&g)?;
    let cfg = gguf::llama::config(&g)?;
    let decoder = RowDecoder::new(cfg.clone(), &gguf::llama::GgufWeights::new(&g, &shape)?)?;
    let questions: Vec<String> = serde_json::from_str(&std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/gguf/chat-questions.json"),
    )?)?;
    let dir = tempfile::tempdir()?;
    let store = BlobStore::open(dir.path())?;
    let weights = store.put(&bytes)?;
    let margin = TOKEN_MARGIN_PPM as f32 / 1e6;

    let mut cases = Vec::new();
    for q in &questions {
        let prompt = gguf::ChatTemplate::of(&g)?.prompt(&[("user", q.as_str())])?;
        let ids = tok
            .encode(prompt.as_str(), false)
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .get_ids()
            .to_vec();
        cases.push((ids.clone(), Sampling::Greedy));
        for seed in 0..seeds {
            cases.push((
                ids.clone(),
                Sampling::Seeded {
                    seed,
                    temperature_milli: 700,
                    top_k: 40,
                    top_p_ppm: 1_000_000,
                },
            ));
        }
    }
    // Checks one generation: whether it was faulted, and for greedy sampling the widest gap
    // of a claimed token below the top logit, as a share of the margin.
    let check = |ids: &[u32], sampling: &Sampling, tokens: &[u32], source: &str| {
        let spec = InferenceSpec {
            arch: ModelArch::LlamaGguf,
            weights: weights.clone(),
            tokenizer: None,
            input: store.put(&encode_u32(&[1, ids.len()], ids))?,
            batch_size: 1,
            llama: None,
            generation: Some(GenerationSpec {
                max_new_tokens: NEW as u32,
                sampling: sampling.clone(),
                stop_tokens: Vec::new(),
            }),
            tolerance: None,
        };
        gpuchain_kernels::force_baseline(false);
        let verdict =
            check_generation(&spec, &store, Backend::Cpu, &encode_u32(&[1, NEW], tokens))?;
        if !verdict.accepted() {
            eprintln!("FAULTED ({source}, {sampling:?}): {verdict:?}");
        }
        // What the fast pass alone says, before a fault is confirmed in f32.
        let flagged =
            first_unjustified_with(&decoder, ids, tokens, sampling, Activations::Int8).is_some();
        if flagged {
            eprintln!("flagged by the fast pass ({source}, {sampling:?}, prompt {ids:?})");
        }
        let mut widest = [0.0f32; 2];
        if *sampling == Sampling::Greedy {
            for (w, activations) in widest.iter_mut().zip([Activations::Int8, Activations::F32]) {
                let logits = decoder.teacher_forced_logits_with(ids, tokens, activations);
                for (j, l) in logits.iter().enumerate() {
                    let top = l.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let low = l.iter().copied().fold(f32::INFINITY, f32::min);
                    *w = w.max((top - l[tokens[j] as usize]) / ((top - low) * margin));
                }
            }
        }
        anyhow::Ok((!verdict.accepted(), flagged, widest))
    };
    let (mut checked, mut faulted, mut flagged, mut widest) = (0usize, 0usize, 0usize, [0.0f32; 2]);
    let mut tally = |(fault, flag, gap): (bool, bool, [f32; 2])| {
        checked += 1;
        faulted += usize::from(fault);
        flagged += usize::from(flag);
        widest = [widest[0].max(gap[0]), widest[1].max(gap[1])];
        (checked, faulted)
    };
    for baseline in [false, true] {
        let source = if baseline {
            "baseline build"
        } else {
            "AVX2 build"
        };
        let mut so_far = (0, 0);
        for (ids, sampling) in &cases {
            gpuchain_kernels::force_baseline(baseline);
            let tokens = decoder.generate(ids, 1, NEW, sampling);
            so_far = tally(check(ids, sampling, &tokens, source)?);
        }
        eprintln!(
            "{source}: {} checked so far, {} faulted",
            so_far.0, so_far.1
        );
    }
    let device = Default::default();
    let model = cfg.load::<CpuBackend>(&gguf::llama::params(&g, &shape)?, &device)?;
    for (ids, sampling) in cases
        .iter()
        .step_by(cases.len().div_ceil(burn_runs.max(1)).max(1))
    {
        let tokens = generate(&model, ids, 1, NEW, sampling, true, &device);
        tally(check(ids, sampling, &tokens, "burn")?);
    }
    println!(
        "{{\"generations\":{checked},\"faulted\":{faulted},\"flagged_by_fast_pass\":{flagged},\"new_tokens\":{NEW},\"widest_greedy_gap_of_margin\":{{\"fast\":{:.4},\"f32\":{:.4}}}}}",
        widest[0], widest[1]
    );
    Ok(())
}
