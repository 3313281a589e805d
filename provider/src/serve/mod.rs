//! `gpuchain-provider serve-model --model FILE`: a GGUF chat model kept loaded behind an
//! OpenAI-compatible HTTP endpoint (`POST /v1/chat/completions`, streamed as server-sent
//! events with `stream: true`; `GET /v1/models`), answering on the row decoder the market's
//! generation jobs run on; with `--embedder DIR`, a MiniLM sentence embedder as well
//! (`POST /v1/embeddings`). More chat models can be offered on the same endpoint
//! (`--also-model NAME=FILE`): each is loaded when first asked for and kept loaded, and under
//! `--memory-budget-mb` the least recently used idle model is unloaded to make room.
//! Requests beyond `--max-concurrent` are answered at once with 429 and `Retry-After`, not
//! queued. This is the provider's side of serving (the client's side is `gpuchain-gateway`).
//! With `--receipts DIR --node URL --operator ADDRESS` it serves chain leases: a request
//! naming a lease must be signed by its client, and its answer carries a receipt
//! (`ledger.rs`, docs/serving.md).

mod batch;
mod cache;
mod embeddings;
mod http;
mod ledger;

#[cfg(test)]
pub(crate) use ledger::keep_acked;
pub(crate) use ledger::Entry as LedgerEntry;
mod stats;

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use clap::Args;

/// Arguments of `serve-model`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// GGUF chat model file (e.g. SmolLM2-135M-Instruct from scripts/fetch-smollm2.sh).
    #[arg(long)]
    model: PathBuf,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8081")]
    listen: SocketAddr,
    /// The model's name in the API (`model` in requests); the file's stem by default.
    #[arg(long)]
    name: Option<String>,
    /// Requests answered at once (generated together, in one batch per model); more get 429
    /// with Retry-After.
    #[arg(long, default_value_t = 8)]
    max_concurrent: usize,
    /// A sentence embedder's directory (`model.safetensors`, `tokenizer.json`; e.g.
    /// all-MiniLM-L6-v2 from scripts/fetch-minilm.sh), served on /v1/embeddings.
    #[arg(long)]
    embedder: Option<PathBuf>,
    /// The embedder's name in the API; the directory's name by default.
    #[arg(long)]
    embedder_name: Option<String>,
    /// Another GGUF chat model offered on the same endpoint, as `NAME=FILE` (repeatable);
    /// loaded when first asked for.
    #[arg(long = "also-model", value_parser = named_model)]
    also_models: Vec<(String, PathBuf)>,
    /// Most megabytes of chat-model weights kept loaded: to load another model, the least
    /// recently used one that no request is using is unloaded first (a request that finds
    /// every loaded model busy is answered 429). Without it, every model asked for stays
    /// loaded.
    #[arg(long)]
    memory_budget_mb: Option<usize>,
    /// Megabytes of earlier prompts' keys and values each loaded chat model keeps (on top of
    /// --memory-budget-mb), so that prompts beginning the same way (the chat template and
    /// system message) read that beginning once; 0 turns it off.
    #[arg(long, env = "GPUCHAIN_PREFIX_CACHE_MB", default_value_t = 32)]
    prefix_cache_mb: usize,
    /// Threads the models' matrix products run on; one per core by default. Providers that
    /// share a host's cores should split them rather than all contend for every core
    /// (docs/serving.md).
    #[arg(long, env = "GPUCHAIN_SERVE_THREADS", value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// Serve chain leases: keep each lease's receipts, bodies and acknowledged batches in
    /// this directory (the provider agent claims from it). Needs --node and --operator.
    #[arg(long, requires_all = ["node", "operator"])]
    receipts: Option<PathBuf>,
    /// CometBFT RPC, to check that a lease's requests come from its client.
    #[arg(long)]
    node: Option<String>,
    /// This provider's account (gpu1…): only its leases are served.
    #[arg(long)]
    operator: Option<gpuchain_types::Address>,
    /// Test only: answer with every generated token shifted by one id, as a cheaper model
    /// would answer, with text and receipts consistent with what is sent (audits must catch
    /// it).
    #[cfg(feature = "test-hooks")]
    #[arg(long, hide = true)]
    dishonest_answers: bool,
}

fn named_model(s: &str) -> std::result::Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((name, file)) if !name.is_empty() && !file.is_empty() => {
            Ok((name.to_string(), PathBuf::from(file)))
        }
        _ => Err(format!("`{s}`: expected NAME=FILE")),
    }
}

/// A model's name in the API: `given`, else `from_path` (a file's stem or a directory's name).
fn api_name(given: Option<String>, from_path: Option<&OsStr>, flag: &str) -> Result<String> {
    match given {
        Some(n) => Ok(n),
        None => from_path
            .and_then(OsStr::to_str)
            .map(str::to_string)
            .ok_or_else(|| anyhow!("name the model with {flag}")),
    }
}

/// The loaded embedder and its name.
pub(crate) struct EmbedModel {
    pub(crate) name: String,
    pub(crate) embedder: gpuchain_compute::embed::Embedder,
}

impl EmbedModel {
    fn load(dir: &std::path::Path, name: Option<String>) -> Result<EmbedModel> {
        let read = |f: &str| {
            std::fs::read(dir.join(f)).with_context(|| format!("reading {}", dir.join(f).display()))
        };
        let embedder = gpuchain_compute::embed::Embedder::new(
            &read("model.safetensors")?,
            &read("tokenizer.json")?,
        )?;
        let name = api_name(name, dir.file_name(), "--embedder-name")?;
        Ok(EmbedModel { name, embedder })
    }
}

/// A loaded chat model (shared with the verifier's audits of served answers).
pub(crate) use gpuchain_compute::serving::ChatModel as Model;

#[cfg(feature = "test-hooks")]
fn dishonest(a: &ServeArgs) -> bool {
    a.dishonest_answers
}

#[cfg(not(feature = "test-hooks"))]
fn dishonest(_: &ServeArgs) -> bool {
    false
}

pub(crate) fn run(a: ServeArgs) -> Result<()> {
    if let Some(threads) = a.threads {
        // Before anything runs on the pool: the global pool is built once.
        rayon::ThreadPoolBuilder::new()
            .num_threads(usize::from(threads))
            .thread_name(|i| format!("compute {i}"))
            .build_global()
            .context("setting up the compute threads")?;
    }
    let first = api_name(a.name.clone(), a.model.file_stem(), "--name")?;
    let mut offered = vec![(first.clone(), a.model.clone())];
    for (name, file) in &a.also_models {
        if offered.iter().any(|(n, _)| n == name) {
            return Err(anyhow!("two models are named `{name}`"));
        }
        offered.push((name.clone(), file.clone()));
    }
    let budget = a.memory_budget_mb.map(|mb| mb.saturating_mul(1_000_000));
    let models = Arc::new(cache::ModelCache::new(
        offered,
        budget,
        a.prefix_cache_mb.saturating_mul(1 << 20),
    ));
    let embedder = match &a.embedder {
        Some(dir) => Some(Arc::new(EmbedModel::load(dir, a.embedder_name.clone())?)),
        None => None,
    };
    gpuchain_agent_kit::cli::block_on(async move {
        // The first model is loaded before the endpoint opens.
        match models.get(&first).await {
            Ok(_) => {}
            Err(cache::Unavailable::Failed(why)) => return Err(anyhow!("loading {first}: {why}")),
            Err(_) => return Err(anyhow!("loading {first}: no room")),
        }
        let ledger = match (&a.receipts, &a.node, a.operator) {
            (Some(dir), Some(node), Some(operator)) => Some(Arc::new(
                ledger::Ledger::open(dir, node, operator)
                    .await
                    .with_context(|| format!("opening the receipts in {}", dir.display()))?,
            )),
            _ => None,
        };
        let listener = tokio::net::TcpListener::bind(a.listen)
            .await
            .with_context(|| format!("listening on {}", a.listen))?;
        tracing::info!(
            models = ?models.names().collect::<Vec<_>>(),
            listen = %listener.local_addr()?,
            "serving"
        );
        // The address on stdout, for scripts that ask for port 0.
        println!("listening on {}", listener.local_addr()?);
        axum::serve(
            listener,
            http::router(
                models,
                embedder,
                a.max_concurrent.max(1),
                ledger,
                dishonest(&a),
            ),
        )
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
        Ok(())
    })
}
