//! Throughput of the digits CNN on the CPU backend over the 1,797 built-in images, the figure
//! `scripts/bench-vs-pytorch.sh cnn` compares with the same network in PyTorch. One process:
//! a warm-up pass, then `--passes` timed passes; prints one JSON line.
//!
//! `cnn_bench [--threads T] [--batch B] [--passes P]` (defaults 2, 256, 20).

use std::time::Instant;

use gpuchain_compute::digits::Digits;
use gpuchain_compute::job::digits_logits as logits;
use gpuchain_compute::models::cnn::init_params;
use gpuchain_compute::Backend;
use gpuchain_jobspec::ModelArch;

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
    let (threads, batch, passes) = (
        arg("--threads", 2)?,
        arg("--batch", 256)?,
        arg("--passes", 20)?,
    );
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()?;
    let data = Digits::builtin()?;
    let params = init_params(1);
    let run = || {
        logits(
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
    println!(
        "{}",
        serde_json::json!({ "impl": "gpuchain", "threads": threads, "batch": batch,
            "images": data.len() * passes, "seconds": seconds,
            "per_s": (data.len() * passes) as f64 / seconds })
    );
    Ok(())
}
