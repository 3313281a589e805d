//! Fine-tuning all-MiniLM-L6-v2 as a sentiment classifier of the Rotten Tomatoes snippets
//! over simulated workers, as a fine-tuning job runs: accuracy per round, bytes up and down
//! against dense, for several seeds, against the linear probe (the head alone on the
//! pretrained encoder). Needs `scripts/fetch-minilm.sh` and `scripts/fetch-reviews.sh`.
//!
//! ```text
//! finetune '{"rounds":8,"topk_ppm":10000}' [--head-only] [--seeds 1,2,3]
//! ```
//! The JSON overrides fields of `train::classifier::sentiment_spec`, the job the demo runs.
//! Prints one JSON line per seed.

use std::path::PathBuf;
use std::time::Instant;

use gpuchain_compute::embed::SentenceTokenizer;
use gpuchain_compute::params::Params;
use gpuchain_compute::train::classifier::sentiment_spec;
use gpuchain_compute::train::{run_task_observed, SentenceDataset, TrainTask};
use gpuchain_compute::Backend;
use gpuchain_jobspec::BlobRef;
use serde_json::json;

fn blob(bytes: &[u8]) -> BlobRef {
    BlobRef {
        blake3: *blake3::hash(bytes).as_bytes(),
        size: bytes.len() as u64,
        urls: Vec::new(),
    }
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let overrides = args
        .iter()
        .find(|a| a.starts_with('{'))
        .cloned()
        .unwrap_or_else(|| "{}".into());
    let head_only = args.iter().any(|a| a == "--head-only");
    let seeds: Vec<u64> = args
        .iter()
        .position(|a| a == "--seeds")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 2, 3]);
    let cache = std::env::var("GPUCHAIN_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/gpuchain/models")
        });
    let weights = std::fs::read(cache.join("all-minilm-l6-v2/model.safetensors"))?;
    let tokenizer = std::fs::read(cache.join("all-minilm-l6-v2/tokenizer.json"))?;
    let csv = std::fs::read_to_string(cache.join("rotten-tomatoes/reviews.csv"))?;
    let data =
        SentenceDataset::from_reviews_csv(&csv, &SentenceTokenizer::from_bytes(&tokenizer)?)?;
    let dataset = data.to_bytes();
    let base = Params::from_safetensors(&weights)?;
    let mut spec = sentiment_spec(blob(&weights), blob(&dataset));
    let mut value = serde_json::to_value(&spec)?;
    for (k, v) in serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&overrides)? {
        value[k] = v;
    }
    spec = serde_json::from_value(value)?;
    let task = TrainTask::classifier(&base, data, head_only)?;
    let grad = task.grad(Backend::Cpu);
    let started = Instant::now();
    let pretrained = task.evaluate(&task.init)?;
    eprintln!(
        "test split encoded in {:.1} s; start accuracy {pretrained:.4}",
        started.elapsed().as_secs_f64()
    );
    for seed in seeds {
        spec.seed = seed;
        let mut rounds = Vec::new();
        let started = Instant::now();
        let (_, report) = run_task_observed(&spec, &task, grad.as_ref(), &mut |coord, loss| {
            let record = coord
                .records()
                .last()
                .cloned()
                .unwrap_or_else(|| unreachable!());
            let accuracy = task.evaluate(&coord.weights())?;
            let up: u64 = record.update_bytes.iter().sum();
            eprintln!(
                "seed {seed} round {:>2}: loss {loss:.4} accuracy {accuracy:.4} up {up} B down {} B ({:.1} s)",
                record.round,
                record.broadcast_bytes,
                started.elapsed().as_secs_f64()
            );
            rounds.push(json!({
                "round": record.round,
                "loss": loss,
                "test_accuracy": accuracy,
                "bytes_up": up,
                "bytes_down": record.broadcast_bytes * u64::from(spec.workers),
                "seconds": started.elapsed().as_secs_f64(),
            }));
            Ok(())
        })?;
        let numel = task.init.numel() as u64;
        println!(
            "{}",
            json!({
                "seed": seed,
                "head_only": head_only,
                "trained_values": numel,
                "spec": spec,
                "start_accuracy": pretrained,
                "test_accuracy": report.test_accuracy,
                "bytes_up_per_worker": report.bytes_per_worker,
                "bytes_down_per_worker": report.bytes_down_per_worker,
                "dense_bytes_per_worker": report.dense_bytes_per_worker,
                "upload_ratio": report.compression_ratio,
                "total_ratio": report.total_ratio,
                "seconds": started.elapsed().as_secs_f64(),
                "rounds": rounds,
            })
        );
    }
    Ok(())
}
