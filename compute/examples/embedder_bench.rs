//! Throughput of the embedder's CPU path on the benchmark sentences, the figure
//! `scripts/bench-vs-pytorch.sh embedder` compares with PyTorch. One process, one timed pass after a
//! warm-up batch; prints one JSON line.
//!
//! `embedder_bench [--threads T] [--batch B]` (defaults 2 and 32). The checkpoint is read from
//! `$GPUCHAIN_MODELS/all-minilm-l6-v2` (default `~/.cache/gpuchain/models`).

use std::path::PathBuf;
use std::time::Instant;

use gpuchain_compute::embed::{BertConfig, CpuEncoder, SentenceTokenizer};
use gpuchain_compute::params::Params;

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

fn main() -> anyhow::Result<()> {
    let (threads, batch) = (arg("--threads", 2)?, arg("--batch", 32)?);
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()?;
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
    println!(
        "{}",
        serde_json::json!({ "impl": "gpuchain", "threads": threads, "batch": batch,
            "sentences": sentences.len(), "tokens": tokens, "seconds": seconds,
            "sentences_per_s": sentences.len() as f64 / seconds })
    );
    Ok(())
}
