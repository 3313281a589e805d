//! Throughput of the CPU paths that `scripts/bench-vs-pytorch.sh` compares with PyTorch. One
//! process: a warm-up, then the timed work; prints one JSON line.
//!
//! `cpu_bench embedder [--threads T] [--batch B]` (defaults 2, 32): the MiniLM embedder over
//! the 256 benchmark sentences, tokenising included, read from
//! `$GPUCHAIN_MODELS/all-minilm-l6-v2` (default `~/.cache/gpuchain/models`).
//!
//! `cpu_bench cnn [--threads T] [--batch B] [--passes P]` (defaults 2, 256, 20): the digits
//! CNN over the 1,797 built-in images, `P` passes.

use std::path::PathBuf;
use std::time::Instant;

use gpuchain_compute::digits::Digits;
use gpuchain_compute::embed::{BertConfig, CpuEncoder, SentenceTokenizer};
use gpuchain_compute::job::digits_logits;
use gpuchain_compute::models::cnn::init_params;
use gpuchain_compute::params::Params;
use gpuchain_compute::Backend;
use gpuchain_jobspec::ModelArch;
use serde_json::{json, Value};

fn arg(name: &str, default: usize) -> anyhow::Result<usize> {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == name) {
        Some(i) => Ok(args
            .get(i + 1)
            .ok_or_else(|| anyhow::anyhow!("{name} needs a value"))?
            .parse()?),
        None => Ok(default),
    }
}

fn embedder(batch: usize) -> anyhow::Result<Value> {
    let dir = std::env::var_os("GPUCHAIN_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/gpuchain/models")
        })
        .join("all-minilm-l6-v2");
    let params = Params::from_safetensors(&std::fs::read(dir.join("model.safetensors"))?)?;
    let tok = SentenceTokenizer::from_bytes(&std::fs::read(dir.join("tokenizer.json"))?)?;
    let encoder = CpuEncoder::load(&params, &BertConfig::new())?;
    let sentences: Vec<String> =
        serde_json::from_str(include_str!("../../data/minilm/bench-sentences.json"))?;
    encoder.embed_all(
        &tok.encode_all(&sentences[..batch.min(sentences.len())])?,
        batch,
    )?;
    // Tokenising is part of the work, as in sentence-transformers' `encode`.
    let start = Instant::now();
    let ids = tok.encode_all(&sentences)?;
    encoder.embed_all(&ids, batch)?;
    let seconds = start.elapsed().as_secs_f64();
    let tokens: usize = ids.iter().map(Vec::len).sum();
    Ok(
        json!({ "sentences": sentences.len(), "tokens": tokens, "seconds": seconds,
        "sentences_per_s": sentences.len() as f64 / seconds }),
    )
}

fn cnn(batch: usize, passes: usize) -> anyhow::Result<Value> {
    let data = Digits::builtin()?;
    let params = init_params(1);
    let run = || {
        digits_logits(
            ModelArch::DigitsCnn,
            &params,
            &data.pixels,
            data.len(),
            batch,
            Backend::Cpu,
        )
    };
    run()?;
    let start = Instant::now();
    for _ in 0..passes {
        run()?;
    }
    let seconds = start.elapsed().as_secs_f64();
    let images = data.len() * passes;
    Ok(json!({ "images": images, "seconds": seconds, "per_s": images as f64 / seconds }))
}

fn main() -> anyhow::Result<()> {
    let work = std::env::args().nth(1).unwrap_or_default();
    let threads = arg("--threads", 2)?;
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()?;
    let (batch, mut out) = match work.as_str() {
        "embedder" => {
            let batch = arg("--batch", 32)?;
            (batch, embedder(batch)?)
        }
        "cnn" => {
            let batch = arg("--batch", 256)?;
            (batch, cnn(batch, arg("--passes", 20)?)?)
        }
        other => anyhow::bail!("unknown workload `{other}`: embedder or cnn"),
    };
    out["impl"] = json!("gpuchain");
    out["threads"] = json!(threads);
    out["batch"] = json!(batch);
    println!("{out}");
    Ok(())
}
