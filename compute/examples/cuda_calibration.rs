//! What CUDA changes, measured on a GPU machine: how far burn-cuda's results sit from the
//! paths verifiers trust (the canonical path for digits and the embedder, the CPU row
//! decoder's teacher-forced check for generations), and how fast the GPU path runs. Prints
//! one JSON line per section on stdout; a section that fails prints its error and the rest
//! still run. Built only with the `cuda` feature; see docs/benchmarks.md ("GPU").
//!
//! `cuda_calibration [--smollm2 FILE.gguf] [--minilm DIR] [--seeds N] [--new T] [--runs R]
//! [--data DIR] [--prompt-ids FILE] [--sections digits,tiny_llama,smollm2_speed,smollm2_checks,minilm,minilm_speed]`
//!
//! `--prompt-ids` writes the speed section's prompt as token ids (JSON), for an anchor that
//! runs the same prompt without our tokenizer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use gpuchain_compute::blob::BlobStore;
use gpuchain_compute::gguf::{self, Gguf};
use gpuchain_compute::llama::{
    check_generation, generate, Activations, Llama, LlamaConfig, RowDecoder,
};
use gpuchain_compute::models::{cnn, mlp};
use gpuchain_compute::tensor_io::{encode_f32, encode_u32};
use gpuchain_compute::{compare, run_job, Backend, Verdict};
use gpuchain_jobspec::{
    BlobRef, GenerationSpec, InferenceSpec, JobSpec, LlamaShape, ModelArch, Sampling,
};
use serde_json::{json, Value};

type Cuda = burn_cuda::Cuda<f32, i32>;
const GPU: Backend = Backend::Cuda { device: 0 };
const NEW: usize = 16;
const SECTIONS: &str = "digits,tiny_llama,smollm2_speed,smollm2_checks,minilm,minilm_speed";

fn main() -> anyhow::Result<()> {
    let mut opts = BTreeMap::new();
    let mut args = std::env::args().skip(1);
    while let Some(key) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| anyhow::anyhow!("{key} needs a value"))?;
        opts.insert(key.trim_start_matches("--").to_string(), value);
    }
    let num = |k: &str, d: usize| opts.get(k).map_or(Ok(d), |v| v.parse::<usize>());
    let (seeds, runs) = (num("seeds", 24)?, num("runs", 5)?);
    if let Some(dir) = opts.get("data") {
        let _ = DATA.set(PathBuf::from(dir));
    }
    let dir = tempfile::tempdir()?;
    let store = BlobStore::open(dir.path())?;
    let gpus = gpuchain_compute::hardware::nvml_gpu_count();
    println!(
        "{}",
        json!({"section": "machine", "nvml_gpus": gpus,
            "cpu_int8_products_fast": gpuchain_kernels::int8_products_fast()})
    );
    anyhow::ensure!(gpus > 0, "NVML reports no GPU");

    let sections = opts
        .get("sections")
        .map_or(SECTIONS.to_string(), String::clone);
    let want = |s: &str| sections.split(',').any(|w| w == s);
    if want("digits") {
        report("digits", digits(&store));
    }
    if want("tiny_llama") {
        report("tiny_llama", tiny_llama(&store));
    }
    if let Some(file) = opts.get("smollm2") {
        let bytes = std::fs::read(file)?;
        if want("smollm2_speed") {
            let ids = opts.get("prompt-ids").map(PathBuf::from);
            report("smollm2_speed", smollm2_speed(&bytes, runs, ids));
        }
        if want("smollm2_checks") {
            report(
                "smollm2_checks",
                smollm2_checks(&store, &bytes, seeds, num("new", 32)?),
            );
        }
    }
    if let Some(dir) = opts.get("minilm") {
        if want("minilm") {
            report("minilm", minilm(&store, Path::new(dir)));
        }
        if want("minilm_speed") {
            report("minilm_speed", minilm_speed(&store, Path::new(dir), runs));
        }
    }
    Ok(())
}

/// The repository's `data/` folder: `--data`, or the source tree's when built here.
static DATA: OnceLock<PathBuf> = OnceLock::new();

fn data(relative: &str) -> PathBuf {
    DATA.get_or_init(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../data"))
        .join(relative)
}

/// Prints a section's result, or its error, as one JSON line.
fn report(section: &str, result: anyhow::Result<Value>) {
    let line = match result {
        Ok(v) => json!({"section": section, "result": v}),
        Err(e) => json!({"section": section, "error": format!("{e:#}")}),
    };
    println!("{line}");
}

fn inference(arch: ModelArch, weights: BlobRef, input: BlobRef) -> InferenceSpec {
    InferenceSpec {
        arch,
        weights,
        tokenizer: None,
        input,
        batch_size: 64,
        llama: None,
        generation: None,
        tolerance: None,
    }
}

/// What a comparison measured, whatever its verdict.
fn verdict_json(v: &Verdict) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Runs `spec` on the GPU and on `reference`, timed, and compares them with the job's own
/// tolerance.
fn gpu_against(spec: &JobSpec, store: &BlobStore, reference: Backend) -> anyhow::Result<Value> {
    // The first run pays for kernel compilation; the second is the one timed.
    let _ = run_job(spec, store, GPU)?;
    let t = Instant::now();
    let gpu = run_job(spec, store, GPU)?;
    let gpu_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let reference_out = run_job(spec, store, reference)?;
    let reference_s = t.elapsed().as_secs_f64();
    let v = compare(
        spec.kind(),
        &spec.tolerance(),
        &gpu.bytes,
        &reference_out.bytes,
    )?;
    Ok(json!({
        "against": reference.name(),
        "accepted": v.accepted(),
        "verdict": verdict_json(&v),
        "gpu_s": gpu_s,
        "reference_s": reference_s,
    }))
}

/// Digits MLP and CNN logits on all 1,797 built-in images: CUDA against canonical.
fn digits(store: &BlobStore) -> anyhow::Result<Value> {
    let d = gpuchain_compute::digits::Digits::builtin()?;
    let rows = d.pixels.len() / 64;
    let px: Vec<f32> = d.pixels.iter().map(|v| v * 16.0).collect();
    let input = store.put(&encode_f32(&[rows, 64], &px))?;
    let mut out = BTreeMap::new();
    for (name, arch, params) in [
        ("mlp", ModelArch::DigitsMlp, mlp::init_params(1)),
        ("cnn", ModelArch::DigitsCnn, cnn::init_params(2)),
    ] {
        let weights = store.put(&params.to_safetensors()?)?;
        let spec = JobSpec::Inference(inference(arch, weights, input.clone()));
        out.insert(name, gpu_against(&spec, store, Backend::Canonical)?);
    }
    Ok(json!({"images": rows, "models": out}))
}

/// The tiny decoder checkpoint: CUDA generations (greedy and seeded) checked by the CPU
/// row decoder's teacher forcing, the verifier's path.
fn tiny_llama(store: &BlobStore) -> anyhow::Result<Value> {
    let root = data("llama");
    let weights = store.put(&std::fs::read(root.join("tiny-llama.safetensors"))?)?;
    let shape = LlamaShape {
        vocab_size: 97,
        hidden_size: 32,
        intermediate_size: 64,
        num_layers: 2,
        num_heads: 4,
        num_kv_heads: 2,
        max_seq_len: 64,
        rope_theta: 10_000,
        rms_norm_eps_ppb: 10_000,
    };
    let prompts: Vec<u32> = (0..8u32)
        .flat_map(|r| (0..6).map(move |i| (r * 11 + i * 7) % 97))
        .collect();
    let input = store.put(&encode_u32(&[8, 6], &prompts))?;
    let (mut cases, mut checked, mut faulted, mut same_as_cpu) = (Vec::new(), 0, 0, 0);
    for sampling in samplings(32) {
        let mut spec = inference(ModelArch::LlamaDecoder, weights.clone(), input.clone());
        spec.llama = Some(shape.clone());
        spec.generation = Some(GenerationSpec {
            max_new_tokens: 24,
            sampling: sampling.clone(),
            stop_tokens: Vec::new(),
        });
        let job = JobSpec::Inference(spec.clone());
        let gpu = run_job(&job, store, GPU)?;
        let cpu = run_job(&job, store, Backend::Cpu)?;
        let v = check_generation(&spec, store, Backend::Cpu, &gpu.bytes)?;
        let same = gpu.bytes == cpu.bytes;
        if !v.accepted() {
            cases.push(json!({"sampling": format!("{sampling:?}"), "verdict": verdict_json(&v)}));
        }
        checked += 1;
        faulted += usize::from(!v.accepted());
        same_as_cpu += usize::from(same);
    }
    Ok(json!({
        "rows": 8,
        "new_tokens": 24,
        "generations": checked,
        "faulted": faulted,
        "same_tokens_as_cpu": same_as_cpu,
        "faults": cases,
    }))
}

/// Greedy, then `seeds` seeded samplers (temperature 0.7, top-k 40).
fn samplings(seeds: u64) -> Vec<Sampling> {
    std::iter::once(Sampling::Greedy)
        .chain((0..seeds).map(|seed| Sampling::Seeded {
            seed,
            temperature_milli: 700,
            top_k: 40,
            top_p_ppm: 1_000_000,
        }))
        .collect()
}

/// Median and spread (min, max) of `xs`.
fn stats(xs: &mut [f64]) -> Value {
    xs.sort_by(f64::total_cmp);
    json!({
        "median": xs.get(xs.len() / 2),
        "min": xs.first(),
        "max": xs.last(),
        "runs": xs.len(),
    })
}

/// What both SmolLM2 sections read from the GGUF.
struct Smollm2<'a> {
    g: Gguf<'a>,
    shape: LlamaShape,
    cfg: LlamaConfig,
    tok: tokenizers::Tokenizer,
}

fn smollm2(bytes: &[u8]) -> anyhow::Result<Smollm2<'_>> {
    let g = Gguf::parse(bytes)?;
    let shape = gguf::llama::shape(&g)?;
    let cfg = gguf::llama::config(&g)?;
    let tok = gguf::tokenizer::tokenizer(&g)?;
    Ok(Smollm2 { g, shape, cfg, tok })
}

impl Smollm2<'_> {
    fn encode(&self, text: &str) -> anyhow::Result<Vec<u32>> {
        Ok(self
            .tok
            .encode(text, false)
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .get_ids()
            .to_vec())
    }

    fn on_gpu(&self, device: &burn_cuda::CudaDevice) -> anyhow::Result<Llama<Cuda>> {
        Ok(self
            .cfg
            .load::<Cuda>(&gguf::llama::params(&self.g, &self.shape)?, device)?)
    }
}

/// SmolLM2 prefill and decode speed on burn-cuda, batch 1 and 8, as `llm_bench` counts
/// them on the CPU (the prompt is its 37 tokens; 16 new tokens).
fn smollm2_speed(bytes: &[u8], runs: usize, ids_out: Option<PathBuf>) -> anyhow::Result<Value> {
    let m = smollm2(bytes)?;
    let text = "The quick brown fox jumps over the lazy dog. ".repeat(37);
    let prompt: Vec<u32> = m.encode(&text)?[..37].to_vec();
    if let Some(path) = ids_out {
        std::fs::write(path, serde_json::to_string(&prompt)?)?;
    }
    let device = burn_cuda::CudaDevice { index: 0 };
    let t = Instant::now();
    let model = m.on_gpu(&device)?;
    let load_s = t.elapsed().as_secs_f64();
    let mut out = BTreeMap::new();
    for batch in [1usize, 8] {
        let prompts = prompt.repeat(batch);
        // Kernels compile on first use of each shape: one untimed run first.
        let _ = generate(
            &model,
            &prompts,
            batch,
            NEW + 1,
            &Sampling::Greedy,
            true,
            &device,
        );
        let (mut prefill, mut decode) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let t = Instant::now();
            let _ = generate(&model, &prompts, batch, 1, &Sampling::Greedy, true, &device);
            let prefill_s = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let _ = generate(
                &model,
                &prompts,
                batch,
                NEW + 1,
                &Sampling::Greedy,
                true,
                &device,
            );
            let decode_s = (t.elapsed().as_secs_f64() - prefill_s).max(1e-9);
            prefill.push((batch * prompt.len()) as f64 / prefill_s);
            decode.push((batch * NEW) as f64 / decode_s);
        }
        out.insert(
            format!("batch_{batch}"),
            json!({"prefill_tokens_per_s": stats(&mut prefill), "decode_tokens_per_s": stats(&mut decode)}),
        );
    }
    Ok(json!({"prompt_tokens": prompt.len(), "new_tokens": NEW, "load_s": load_s, "speed": out}))
}

/// Rows of the seeded chat jobs: a provider batches them, each row drawing from its own
/// stream.
const SEEDED_ROWS: usize = 8;

/// SmolLM2 chat answers generated on burn-cuda (the provider's GPU path), each job checked
/// by the verifier's CPU teacher-forced check, as a job ends its rows: at the end-of-sequence
/// token. Per question: one greedy answer of 16 tokens (its widest gap below the CPU's top
/// logit, as a share of the margin the check allows, and whether the CPU generates the same
/// tokens), then `seeds` seeded jobs of [`SEEDED_ROWS`] answers of up to `new` tokens each.
fn smollm2_checks(
    store: &BlobStore,
    bytes: &[u8],
    seeds: usize,
    new: usize,
) -> anyhow::Result<Value> {
    let m = smollm2(bytes)?;
    let decoder = RowDecoder::new(
        m.cfg.clone(),
        &gguf::llama::GgufWeights::new(&m.g, &m.shape)?,
    )?;
    let device = burn_cuda::CudaDevice { index: 0 };
    let model = m.on_gpu(&device)?;
    let weights = store.put(bytes)?;
    let stops: Vec<u32> = gguf::eos_token(&m.g).into_iter().collect();
    let questions: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(data("gguf/chat-questions.json"))?)?;
    let margin = gpuchain_compute::llama::TOKEN_MARGIN_PPM as f32 / 1e6;
    let (mut answers_checked, mut faulted_answers, mut widest, mut same_as_cpu_greedy) =
        (0usize, 0usize, 0f32, 0usize);
    let (mut generated_tokens, mut gpu_s, mut check_s) = (0usize, 0f64, 0f64);
    let mut faults = Vec::new();
    let mut answers = Vec::new();
    for q in &questions {
        let prompt = gguf::ChatTemplate::of(&m.g)?.prompt(&[("user", q.as_str())])?;
        let ids = m.encode(&prompt)?;
        for sampling in samplings(seeds as u64) {
            let (rows, new) = match sampling {
                Sampling::Greedy => (1, NEW),
                Sampling::Seeded { .. } => (SEEDED_ROWS, new),
            };
            let t = Instant::now();
            let mut tokens = generate(
                &model,
                &ids.repeat(rows),
                rows,
                new,
                &sampling,
                true,
                &device,
            );
            gpu_s += t.elapsed().as_secs_f64();
            let mut ends = Vec::new();
            for row in tokens.chunks_mut(new) {
                let end = row
                    .iter()
                    .position(|t| stops.contains(t))
                    .map_or(new, |p| p + 1);
                let last = row[end - 1];
                row[end..].iter_mut().for_each(|t| *t = last);
                ends.push(end);
            }
            generated_tokens += ends.iter().sum::<usize>();
            let input = store.put(&encode_u32(&[rows, ids.len()], &ids.repeat(rows)))?;
            let mut spec = inference(ModelArch::LlamaGguf, weights.clone(), input);
            spec.batch_size = rows as u32;
            spec.generation = Some(GenerationSpec {
                max_new_tokens: new as u32,
                sampling: sampling.clone(),
                stop_tokens: stops.clone(),
            });
            let t = Instant::now();
            let v = check_generation(
                &spec,
                store,
                Backend::Cpu,
                &encode_u32(&[rows, new], &tokens),
            )?;
            check_s += t.elapsed().as_secs_f64();
            answers_checked += rows;
            if !v.accepted() {
                faulted_answers += 1;
                faults.push(json!({"question": q, "sampling": format!("{sampling:?}"), "verdict": verdict_json(&v)}));
            }
            if sampling == Sampling::Greedy {
                // The f32 pass: the one whose faults stand (the check's faster 8-bit pass
                // only clears).
                let end = ends[0];
                for (j, l) in decoder
                    .teacher_forced_logits_with(&ids, &tokens[..end], Activations::F32)
                    .iter()
                    .enumerate()
                {
                    let top = l.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let low = l.iter().copied().fold(f32::INFINITY, f32::min);
                    widest = widest.max((top - l[tokens[j] as usize]) / ((top - low) * margin));
                }
                let cpu = decoder.generate(&ids, 1, NEW, &Sampling::Greedy);
                same_as_cpu_greedy += usize::from(cpu[..end] == tokens[..end]);
                answers.push(json!({"question": q,
                    "answer": m.tok.decode(&tokens[..end], true).unwrap_or_default()}));
            } else if answers.len() < questions.len() + 3 {
                answers.push(json!({"question": q, "sampling": format!("{sampling:?}"),
                    "answer": m.tok.decode(&tokens[..ends[0]], true).unwrap_or_default()}));
            }
        }
    }
    Ok(json!({
        "answers": answers_checked,
        "jobs_faulted": faulted_answers,
        "seeded_rows_a_job": SEEDED_ROWS,
        "seeded_max_new_tokens": new,
        "greedy_new_tokens": NEW,
        "generated_tokens": generated_tokens,
        "widest_greedy_gap_of_margin": widest,
        "greedy_same_tokens_as_cpu": same_as_cpu_greedy,
        "gpu_generate_s": gpu_s,
        "cpu_check_s": check_s,
        "cpu_threads": std::thread::available_parallelism().map_or(0, usize::from),
        "sample_answers": answers,
        "faults": faults,
    }))
}

/// The MiniLM embedding job of the 256 benchmark sentences, batch 32.
fn minilm_job(store: &BlobStore, dir: &Path) -> anyhow::Result<(JobSpec, usize)> {
    let weights = store.put(&std::fs::read(dir.join("model.safetensors"))?)?;
    let tokenizer = store.put(&std::fs::read(dir.join("tokenizer.json"))?)?;
    let sentences = std::fs::read(data("minilm/bench-sentences.json"))?;
    let count = serde_json::from_slice::<Vec<String>>(&sentences)?.len();
    let mut spec = inference(ModelArch::MiniLmEmbedder, weights, store.put(&sentences)?);
    spec.tokenizer = Some(tokenizer);
    spec.batch_size = 32;
    Ok((JobSpec::Inference(spec), count))
}

/// MiniLM embeddings on CUDA against the canonical path.
fn minilm(store: &BlobStore, dir: &Path) -> anyhow::Result<Value> {
    let (job, count) = minilm_job(store, dir)?;
    Ok(
        json!({"sentences": count, "batch": 32, "check": gpu_against(&job, store, Backend::Canonical)?}),
    )
}

/// MiniLM throughput on CUDA, in the form of `gen-reference-vectors.py --bench`.
fn minilm_speed(store: &BlobStore, dir: &Path, runs: usize) -> anyhow::Result<Value> {
    let (job, count) = minilm_job(store, dir)?;
    let _ = run_job(&job, store, GPU)?;
    let mut rate = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let _ = run_job(&job, store, GPU)?;
        rate.push(count as f64 / t.elapsed().as_secs_f64());
    }
    Ok(json!({"sentences": count, "batch": 32, "sentences_per_s": stats(&mut rate)}))
}
