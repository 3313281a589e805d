//! Benchmarks for docs/benchmarks.md. Run in release:
//!
//! ```text
//! cargo run --release -p gpuchain-compute --example bench -- compression > compression.json
//! cargo run --release -p gpuchain-compute --example bench -- embedder
//! cargo run --release -p gpuchain-compute --example bench -- train '{"topk_ppm":1000,"rounds":400}'
//! cargo run --release -p gpuchain-compute --example bench -- canonical
//! ```
//! Each prints one JSON document on stdout.

use std::time::Instant;

use gpuchain_compute::digits::Digits;
use gpuchain_compute::models::mlp;
use gpuchain_compute::train::{run_training, CanonicalGrad};
use gpuchain_jobspec::{TrainingSpec, ValueBits, WeightsInit};
use serde_json::json;

/// The benchmarks' base training spec (top-1 %, error feedback, f16, 60 rounds); cases
/// override fields of its JSON form.
fn base_spec() -> TrainingSpec {
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
        topk_ppm: 10_000,
        value_bits: ValueBits::B16,
        error_feedback: true,
        momentum_correction: false,
        warmup_rounds: 0,
        seed: 5,
        tolerance: None,
        coordinator_url: None,
    }
}

fn compression() -> serde_json::Value {
    let rounds: u32 = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(400);
    let r = format!(r#""rounds":{rounds}"#);
    let cases = [
        (
            "dense f32",
            format!(r#"{{{r},"topk_ppm":1000000,"value_bits":"32"}}"#),
        ),
        ("dense f16", format!(r#"{{{r},"topk_ppm":1000000}}"#)),
        ("top-1% EF f16", format!(r#"{{{r},"topk_ppm":10000}}"#)),
        (
            "top-1% no-EF f16",
            format!(r#"{{{r},"topk_ppm":10000,"error_feedback":false}}"#),
        ),
        (
            "top-1% EF int8",
            format!(r#"{{{r},"topk_ppm":10000,"value_bits":"8"}}"#),
        ),
        ("top-0.1% EF f16", format!(r#"{{{r},"topk_ppm":1000}}"#)),
        (
            "top-0.1% EF int8",
            format!(r#"{{{r},"topk_ppm":1000,"value_bits":"8"}}"#),
        ),
        (
            "top-0.1% no-EF int8",
            format!(r#"{{{r},"topk_ppm":1000,"value_bits":"8","error_feedback":false}}"#),
        ),
        (
            "top-0.1% DGC f16",
            format!(r#"{{{r},"topk_ppm":1000,"momentum_correction":true,"warmup_rounds":8}}"#),
        ),
        (
            "top-0.1% DGC int8",
            format!(
                r#"{{{r},"topk_ppm":1000,"momentum_correction":true,"warmup_rounds":8,"value_bits":"8"}}"#
            ),
        ),
    ];
    let rows: Vec<_> = cases
        .iter()
        .map(|(name, o)| {
            let t = Instant::now();
            let mut row = train_one(o);
            row["case"] = json!(name);
            row["seconds"] = json!(t.elapsed().as_secs_f64());
            row
        })
        .collect();
    json!({ "bench": "compression", "rounds": rounds, "workers": 4, "local_steps": 4, "rows": rows })
}

fn time<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let v = f();
    (v, t.elapsed().as_secs_f64())
}

fn canonical() -> serde_json::Value {
    use gpuchain_compute::{canonical, Backend};
    let d = Digits::builtin().unwrap();
    let p = mlp::init_params(1);
    let c = gpuchain_compute::models::cnn::init_params(1);
    let run = |arch, params: &gpuchain_compute::params::Params, backend| {
        let job =
            gpuchain_compute::job::digits_logits(arch, params, &d.pixels, d.len(), 256, backend);
        job.unwrap()
    };
    let (_, mlp_fast) = time(|| run(gpuchain_jobspec::ModelArch::DigitsMlp, &p, Backend::Cpu));
    let (_, mlp_canon) = time(|| canonical::mlp::forward(&p, &d.pixels, d.len()).unwrap());
    let (_, cnn_fast) = time(|| run(gpuchain_jobspec::ModelArch::DigitsCnn, &c, Backend::Cpu));
    let (_, cnn_canon) = time(|| canonical::cnn::forward(&c, &d.pixels, d.len()).unwrap());
    json!({ "bench": "canonical", "rows": d.len(),
            "mlp": { "fast_s": mlp_fast, "canonical_s": mlp_canon, "slowdown": mlp_canon / mlp_fast },
            "cnn": { "fast_s": cnn_fast, "canonical_s": cnn_canon, "slowdown": cnn_canon / cnn_fast } })
}

fn embedder() -> serde_json::Value {
    use gpuchain_compute::embed::{embed, SentenceTokenizer};
    use gpuchain_compute::Backend;
    let dir = std::path::PathBuf::from(std::env::var("HOME").unwrap())
        .join(".cache/gpuchain/models/all-minilm-l6-v2");
    let params = gpuchain_compute::params::Params::from_safetensors(
        &std::fs::read(dir.join("model.safetensors")).unwrap(),
    )
    .unwrap();
    let tok =
        SentenceTokenizer::from_bytes(&std::fs::read(dir.join("tokenizer.json")).unwrap()).unwrap();
    let sentences: Vec<String> =
        serde_json::from_str(include_str!("../../data/minilm/bench-sentences.json")).unwrap();
    embed(&params, &tok, &sentences[..32], 32, Backend::Cpu).unwrap();
    let (_, fast) = time(|| embed(&params, &tok, &sentences, 32, Backend::Cpu).unwrap());
    let few = &sentences[..16];
    let (_, canon) = time(|| embed(&params, &tok, few, 16, Backend::Canonical).unwrap());
    let fast_rate = sentences.len() as f64 / fast;
    let canon_rate = few.len() as f64 / canon;
    json!({ "bench": "embedder", "impl": "cpu-encoder", "sentences": sentences.len(),
            "sentences_per_s": fast_rate, "canonical_sentences_per_s": canon_rate,
            "canonical_slowdown": fast_rate / canon_rate,
            "threads": std::thread::available_parallelism().map_or(1, |n| n.get()) })
}

/// One training run: the default spec with the JSON object in `overrides` merged over it.
fn train_one(overrides: &str) -> serde_json::Value {
    let mut base = serde_json::to_value(base_spec()).unwrap();
    let extra: serde_json::Value =
        serde_json::from_str(overrides).expect("overrides must be a JSON object");
    for (k, v) in extra.as_object().expect("a JSON object") {
        base[k] = v.clone();
    }
    let s: TrainingSpec = serde_json::from_value(base.clone()).expect("a valid training spec");
    let data = Digits::builtin().unwrap();
    let (_, r) = run_training(&s, &data, &mlp::init_params(1), &CanonicalGrad).unwrap();
    json!({ "spec": base, "test_accuracy": r.test_accuracy, "compression_ratio": r.compression_ratio, "bytes_per_worker": r.bytes_per_worker, "bytes_down_per_worker": r.bytes_down_per_worker, "dense_bytes_per_worker": r.dense_bytes_per_worker, "total_ratio": r.total_ratio })
}

fn main() {
    let what = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "compression".into());
    let doc = match what.as_str() {
        "compression" => compression(),
        "train" => train_one(&std::env::args().nth(2).unwrap_or_else(|| "{}".into())),
        "canonical" => canonical(),
        "embedder" => embedder(),
        other => {
            eprintln!(
                "unknown benchmark `{other}`: compression | train JSON | canonical | embedder"
            );
            std::process::exit(2);
        }
    };
    println!("{}", serde_json::to_string_pretty(&doc).unwrap());
}
