//! `gpuchain-provider run-job spec.json`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use gpuchain_compute::blob::{BlobFetcher, BlobStore, FetchPolicy};
use gpuchain_compute::llama::answer_texts;
use gpuchain_compute::{fetch_job_blobs, run_job, Backend};
use gpuchain_jobspec::JobSpec;
use serde::Serialize;

use super::Output;

/// Arguments of `run-job`.
#[derive(Debug, Args)]
pub(crate) struct RunJobArgs {
    /// Job spec as JSON (see docs/compute.md).
    spec: PathBuf,
    /// Blob cache directory.
    #[arg(long, env = "GPUCHAIN_BLOBS", default_value_os_t = default_blob_dir())]
    blobs: PathBuf,
    /// Backend: auto, cpu, canonical (deterministic), or cuda[:N] in builds with `cuda`.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Files to add to the blob cache before running (e.g. local inputs named by hash in the spec).
    #[arg(long = "add-blob")]
    add_blobs: Vec<PathBuf>,
    /// Write the result bytes here (default: `<blobs>/<hash>`, always stored there).
    #[arg(long, short)]
    out: Option<PathBuf>,
    /// Output format of the summary.
    #[arg(long, value_enum, default_value = "text")]
    output: Output,
}

fn default_blob_dir() -> PathBuf {
    std::env::var_os("HOME").map_or_else(
        || PathBuf::from(".gpuchain-blobs"),
        |h| PathBuf::from(h).join(".cache/gpuchain/blobs"),
    )
}

#[derive(Serialize)]
struct Summary {
    kind: gpuchain_jobspec::JobKind,
    backend: String,
    result_blake3: String,
    result_bytes: u64,
    result_path: PathBuf,
    transcript_root: Option<String>,
    seconds: f64,
    /// A chat or text generation job's answers, as text.
    #[serde(skip_serializing_if = "Option::is_none")]
    answers: Option<Vec<String>>,
}

pub(super) fn run(args: RunJobArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.spec)
        .with_context(|| format!("reading {}", args.spec.display()))?;
    let spec: JobSpec = serde_json::from_str(&text)
        .with_context(|| format!("parsing job spec {}", args.spec.display()))?;
    spec.validate().context("job spec is invalid")?;
    let backend = Backend::parse(&args.backend)?;
    let store = BlobStore::open(&args.blobs)?;
    for file in &args.add_blobs {
        let blob = store
            .put(&std::fs::read(file).with_context(|| format!("reading {}", file.display()))?)?;
        eprintln!("added {} as {}", file.display(), blob.hash());
    }
    // The job file is the user's own, so are the hosts it names.
    let fetcher = BlobFetcher::with_policy(store.clone(), FetchPolicy::any_host())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime
        .block_on(fetch_job_blobs(&spec, &fetcher, &|p| {
            eprintln!("fetching {}: {} / {} bytes", p.url, p.received, p.total);
        }))
        .context("fetching job blobs")?;
    let start = std::time::Instant::now();
    let out = run_job(&spec, &store, backend).context("running job")?;
    let seconds = start.elapsed().as_secs_f64();
    let stored = store.put(&out.bytes)?;
    let path = match &args.out {
        Some(p) => {
            std::fs::write(p, &out.bytes).with_context(|| format!("writing {}", p.display()))?;
            p.clone()
        }
        None => store.path(&stored.hash()),
    };
    let summary = Summary {
        kind: out.kind,
        backend: backend.name(),
        result_blake3: out.hash.to_hex(),
        result_bytes: out.bytes.len() as u64,
        result_path: path,
        transcript_root: out.transcript_root.map(hex::encode),
        seconds,
        answers: match &spec {
            JobSpec::Inference(s) => answer_texts(s, &store, &out.bytes)?,
            JobSpec::Training(_) => None,
        },
    };
    match args.output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&summary)?),
        Output::Text => {
            println!("kind      {:?}", summary.kind);
            println!("backend   {}", summary.backend);
            println!(
                "result    {} ({} bytes)",
                summary.result_blake3, summary.result_bytes
            );
            println!("written   {}", summary.result_path.display());
            if let Some(r) = &summary.transcript_root {
                println!("transcript root {r}");
            }
            println!("time      {:.3} s", summary.seconds);
            for (i, answer) in summary.answers.iter().flatten().enumerate() {
                println!("answer {i}  {answer}");
            }
        }
    }
    Ok(())
}
