//! Where the time of one SmolLM2 chat answer goes on this machine: reading the GGUF file,
//! dequantising to f32, building the burn model, and generating (prefill plus each token);
//! then the same answer from the row decoder (`llama::RowDecoder`, the CPU job path).
//!
//! `cargo run -p gpuchain-compute --example smollm2_phases -- FILE.gguf [NEW_TOKENS]`

use std::time::Instant;

use gpuchain_compute::backend::CpuBackend;
use gpuchain_compute::gguf::{self, Gguf};
use gpuchain_compute::llama::{generate, RowDecoder};
use gpuchain_jobspec::Sampling;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let file = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: FILE.gguf [NEW_TOKENS]"))?;
    let new: usize = args.next().map_or(Ok(16), |n| n.parse())?;
    let t = Instant::now();
    let bytes = std::fs::read(&file)?;
    let read = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let g = Gguf::parse(&bytes)?;
    let shape = gguf::llama::shape(&g)?;
    let params = gguf::llama::params(&g, &shape)?;
    let dequant = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let cfg = gguf::llama::config(&g)?;
    let device = Default::default();
    let model = cfg.load::<CpuBackend>(&params, &device)?;
    let load = t.elapsed().as_secs_f64();
    let tok = gguf::tokenizer::tokenizer(&g)?;
    let prompt =
        gguf::ChatTemplate::of(&g)?.prompt(&[("user", "What is the capital of France?")])?;
    let ids = tok
        .encode(prompt.as_str(), false)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let ids = ids.get_ids().to_vec();
    let t = Instant::now();
    let _ = generate(&model, &ids, 1, 1, &Sampling::Greedy, true, &device);
    let prefill = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let out = generate(&model, &ids, 1, new, &Sampling::Greedy, true, &device);
    let all = t.elapsed().as_secs_f64();
    println!(
        "read {read:.2} s, dequantise {dequant:.2} s, build model {load:.2} s, prefill of {} tokens {prefill:.2} s, {new} tokens {all:.2} s ({:.1} tokens/s after prefill)",
        ids.len(),
        (new.saturating_sub(1)) as f64 / (all - prefill).max(1e-9)
    );
    println!("{:?}", gguf::answer_text(&g, &tok, &out)?);
    let rows = RowDecoder::new(cfg, &params)?;
    let t = Instant::now();
    let _ = rows.generate(&ids, 1, 1, &Sampling::Greedy);
    let prefill = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let fast = rows.generate(&ids, 1, new, &Sampling::Greedy);
    let all = t.elapsed().as_secs_f64();
    println!(
        "row decoder: prefill {prefill:.2} s, {new} tokens {all:.2} s ({:.1} tokens/s after prefill), same tokens: {}",
        (new.saturating_sub(1)) as f64 / (all - prefill).max(1e-9),
        fast == out
    );
    Ok(())
}
