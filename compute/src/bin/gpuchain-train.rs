//! `gpuchain-train`: the client's side of a networked training job.
//!
//! `gpuchain-train coordinate --spec training.json --listen 127.0.0.1:7100 --store DIR`
//! serves the round protocol of `gpuchain_compute::train::remote` for the order's k leased
//! providers, prints each round's loss, test accuracy and bytes sent against dense, and
//! when the last round closes prints the transcript root (the hash the providers commit on
//! chain) and keeps serving the transcript, checkpoints and final weights for verifiers
//! until stopped.
//!
//! `gpuchain-train sentences --csv reviews.csv --text-column text --label-column category
//! --classes rotten,fresh --tokenizer tokenizer.json --out dataset.json` writes the dataset
//! blob of a fine-tuning job (`mini_lm_classifier`) from a CSV of labelled sentences,
//! tokenised with the model's own tokenizer, and prints its blake3 and size for the spec.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use gpuchain_compute::blob::{BlobFetcher, BlobStore, FetchPolicy};
use gpuchain_compute::embed::SentenceTokenizer;
use gpuchain_compute::train::remote::{serve_coordinator, CoordinatorService};
use gpuchain_compute::train::{SentenceDataset, TrainTask};
use gpuchain_jobspec::{JobSpec, TrainingSpec};

#[derive(Parser)]
#[command(
    name = "gpuchain-train",
    version,
    about = "Client side of networked training jobs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the coordinator for a training spec (a `TrainingSpec` or a whole `JobSpec` JSON).
    Coordinate {
        /// Spec file.
        #[arg(long)]
        spec: PathBuf,
        /// Address to serve on.
        #[arg(long, default_value = "127.0.0.1:7100")]
        listen: SocketAddr,
        /// Blob store for the dataset, weights, updates and checkpoints.
        #[arg(long)]
        store: PathBuf,
        /// Print each round as a JSON line instead of text.
        #[arg(long)]
        json: bool,
        /// Exit once training is done instead of serving the transcript until stopped.
        #[arg(long)]
        exit_when_done: bool,
    },
    /// Write a fine-tuning job's dataset blob from a CSV of labelled sentences.
    Sentences {
        /// CSV file with a header row.
        #[arg(long)]
        csv: PathBuf,
        /// Column holding the sentence.
        #[arg(long, default_value = "text")]
        text_column: String,
        /// Column holding the class name.
        #[arg(long, default_value = "label")]
        label_column: String,
        /// Class names in label order, comma-separated; rows of other classes are left out.
        #[arg(long, value_delimiter = ',', required = true)]
        classes: Vec<String>,
        /// The model's `tokenizer.json`.
        #[arg(long)]
        tokenizer: PathBuf,
        /// Hold out every N-th kept row for the test split.
        #[arg(long, default_value_t = 5)]
        test_every: usize,
        /// Where to write the dataset (JSON).
        #[arg(long)]
        out: PathBuf,
    },
}

#[allow(clippy::too_many_arguments)]
fn sentences(
    csv: &PathBuf,
    text_column: &str,
    label_column: &str,
    classes: &[String],
    tokenizer: &PathBuf,
    test_every: usize,
    out: &PathBuf,
) -> Result<()> {
    let text =
        std::fs::read_to_string(csv).with_context(|| format!("reading {}", csv.display()))?;
    let tokenizer =
        std::fs::read(tokenizer).with_context(|| format!("reading {}", tokenizer.display()))?;
    let tokenizer = SentenceTokenizer::from_bytes(&tokenizer)?;
    let classes: Vec<&str> = classes.iter().map(String::as_str).collect();
    let data = SentenceDataset::from_csv(
        &text,
        text_column,
        label_column,
        &classes,
        test_every,
        &tokenizer,
    )?;
    let bytes = data.to_bytes();
    std::fs::write(out, &bytes).with_context(|| format!("writing {}", out.display()))?;
    println!(
        "{}",
        serde_json::json!({
            "train": data.train.len(),
            "test": data.test.len(),
            "classes": data.classes,
            "blake3": blake3::hash(&bytes).to_hex().to_string(),
            "size": bytes.len(),
        })
    );
    Ok(())
}

fn read_spec(path: &PathBuf) -> Result<TrainingSpec> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if let Ok(JobSpec::Training(spec)) = serde_json::from_slice::<JobSpec>(&bytes) {
        return Ok(spec);
    }
    serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()))
}

async fn coordinate(
    spec: TrainingSpec,
    listen: SocketAddr,
    store: PathBuf,
    json: bool,
    exit_when_done: bool,
) -> Result<()> {
    JobSpec::Training(spec.clone()).validate()?;
    let store = BlobStore::open(store)?;
    let fetcher = BlobFetcher::with_policy(store.clone(), FetchPolicy::any_host())?;
    fetcher.fetch(&spec.dataset, &|_| {}).await?;
    if let gpuchain_jobspec::WeightsInit::Blob(b) = &spec.init {
        fetcher.fetch(b, &|_| {}).await?;
    }
    let task = TrainTask::load(&spec, &store)?;
    let service = CoordinatorService::new(&spec, task, store)?;
    let (bound, server) = serve_coordinator(service.clone(), listen).await?;
    eprintln!(
        "coordinator for {} workers × {} rounds on http://{bound}",
        spec.workers, spec.rounds
    );
    let mut printed = 0;
    loop {
        let transcript = service.transcript();
        for p in transcript.progress.iter().skip(printed) {
            if json {
                println!("{}", serde_json::to_string(p)?);
            } else {
                println!("{p}");
            }
        }
        printed = transcript.progress.len();
        let status = service.status();
        if let Some(root) = status.transcript_root.as_ref().filter(|_| status.done()) {
            if json {
                println!("{}", serde_json::json!({ "transcript_root": root }));
            } else {
                println!("training done; transcript root {root}");
            }
            if exit_when_done {
                server.abort();
                return Ok(());
            }
            break;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
            _ = tokio::signal::ctrl_c() => { server.abort(); return Ok(()); }
        }
    }
    tokio::signal::ctrl_c().await?;
    server.abort();
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Coordinate {
            spec,
            listen,
            store,
            json,
            exit_when_done,
        } => coordinate(read_spec(&spec)?, listen, store, json, exit_when_done).await,
        Command::Sentences {
            csv,
            text_column,
            label_column,
            classes,
            tokenizer,
            test_every,
            out,
        } => sentences(
            &csv,
            &text_column,
            &label_column,
            &classes,
            &tokenizer,
            test_every,
            &out,
        ),
    }
}
