//! `gpuchain-provider chat --model FILE "question"`: asks a GGUF chat model (e.g.
//! SmolLM2-135M-Instruct from `scripts/fetch-smollm2.sh`) one question on this machine,
//! through the same job runtime a `llama_gguf` order runs on, and prints the answer.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use clap::Args;
use gpuchain_compute::blob::BlobStore;
use gpuchain_compute::gguf::{self, Gguf};
use gpuchain_compute::llama::answer_texts;
use gpuchain_compute::tensor_io::{decode, Tensor};
use gpuchain_compute::{run_job, Backend};
use gpuchain_jobspec::{GenerationSpec, InferenceSpec, JobSpec, ModelArch, Sampling};

/// Arguments of `chat`.
#[derive(Debug, Args)]
pub(crate) struct ChatArgs {
    /// The question.
    question: String,
    /// GGUF model file.
    #[arg(long)]
    model: PathBuf,
    /// Tokens to generate at most (the answer ends at the end-of-turn token).
    #[arg(long, default_value_t = 48)]
    max_tokens: u32,
    /// Sample with this seed (temperature 0.7, top 40) instead of greedy decoding.
    #[arg(long)]
    seed: Option<u64>,
    /// With --seed: sample within this share of the probability mass (nucleus, 0 < p ≤ 1).
    #[arg(long, default_value_t = 0.9)]
    top_p: f64,
    /// Backend: auto, cpu, canonical, or cuda[:N] in builds with `cuda`.
    #[arg(long, default_value = "auto")]
    backend: String,
}

pub(super) fn run(a: ChatArgs) -> Result<()> {
    let weights =
        std::fs::read(&a.model).with_context(|| format!("reading {}", a.model.display()))?;
    let file = Gguf::parse(&weights)?;
    // The question as a chat job's text input: the job reads it into the chat template with
    // the file's tokenizer, as the serving endpoint reads a chat request.
    let input = serde_json::to_vec(&serde_json::json!([
        { "messages": [{ "role": "user", "content": a.question }] }
    ]))?;
    let store = BlobStore::open(std::env::temp_dir().join("gpuchain-chat-blobs"))?;
    let sampling = match a.seed {
        Some(seed) => Sampling::Seeded {
            seed,
            temperature_milli: 700,
            top_k: 40,
            top_p_ppm: (a.top_p.clamp(0.000_001, 1.0) * 1e6).round() as u32,
        },
        None => Sampling::Greedy,
    };
    let inference = InferenceSpec {
        arch: ModelArch::LlamaGguf,
        weights: store.put(&weights)?,
        tokenizer: None,
        input: store.put(&input)?,
        batch_size: 1,
        llama: None,
        generation: Some(GenerationSpec {
            max_new_tokens: a.max_tokens,
            sampling,
            stop_tokens: gguf::eos_token(&file).into_iter().collect(),
        }),
        tolerance: None,
    };
    let spec = JobSpec::Inference(inference.clone());
    let started = Instant::now();
    let out = run_job(&spec, &store, Backend::parse(&a.backend)?)?;
    let answer = answer_texts(&inference, &store, &out.bytes)?
        .and_then(|a| a.into_iter().next())
        .ok_or_else(|| anyhow!("the model returned no answer"))?;
    println!("{answer}");
    let tokens = match decode(&out.bytes)? {
        Tensor::U32 { data, .. } => data,
        Tensor::F32 { .. } => return Err(anyhow!("the model returned no token ids")),
    };
    // The job's output repeats the stop token to its full length; count what was generated.
    let eos = gguf::eos_token(&file);
    let generated = tokens
        .iter()
        .position(|t| Some(*t) == eos)
        .map_or(tokens.len(), |p| p + 1);
    eprintln!(
        "({generated} tokens in {:.1} s; result {})",
        started.elapsed().as_secs_f64(),
        out.hash.to_hex()
    );
    Ok(())
}
