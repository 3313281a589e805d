//! Running a job from its spec: validate, check it fits, read verified blobs, run, encode.

mod digits;
mod fit;

use gpuchain_jobspec::{BlobHash, JobKind, JobSpec};

pub use digits::logits as digits_logits;
pub use fit::{available_memory_bytes, estimate_memory_bytes};

use crate::blob::{hash_bytes, BlobStore};
use crate::{Backend, Error, Result};

/// A job's result: canonical bytes (see `docs/compute.md`) and their blake3.
#[derive(Clone, Debug, PartialEq)]
pub struct JobOutput {
    /// The job kind, which fixes the encoding and the comparison.
    pub kind: JobKind,
    /// Encoded result: a `GCT1` tensor for inference, safetensors weights for training.
    pub bytes: Vec<u8>,
    /// blake3 of `bytes`.
    pub hash: BlobHash,
    /// Merkle root of the training transcript (training jobs only).
    pub transcript_root: Option<[u8; 32]>,
}

impl JobOutput {
    pub(crate) fn new(kind: JobKind, bytes: Vec<u8>, transcript_root: Option<[u8; 32]>) -> Self {
        let hash = hash_bytes(&bytes);
        Self {
            kind,
            bytes,
            hash,
            transcript_root,
        }
    }
}

/// Runs a job whose blobs are already in `store` (see [`crate::fetch_job_blobs`]).
/// Fails early, before loading weights, when the spec is invalid or the job cannot fit.
pub fn run_job(spec: &JobSpec, store: &BlobStore, backend: Backend) -> Result<JobOutput> {
    spec.validate()?;
    let needed = estimate_memory_bytes(spec);
    let available = available_memory_bytes(backend);
    if available > 0 && needed > available {
        return Err(Error::DoesNotFit {
            needed_bytes: needed,
            available_bytes: available,
        });
    }
    match spec {
        JobSpec::Inference(s) => {
            use gpuchain_jobspec::ModelArch::*;
            match s.arch {
                DigitsMlp | DigitsCnn => digits::run(s, store, backend),
                MiniLmClassifier => crate::train::classifier::run_job(s, store),
                MiniLmEmbedder => crate::embed::run_job(s, store, backend),
                LlamaDecoder | LlamaGguf => crate::llama::run_job(s, store, backend),
            }
        }
        JobSpec::Training(t) => crate::train::run_training_job(t, store, backend),
    }
}

/// Fetches every blob the job names into the fetcher's store, verifying each.
pub async fn fetch_job_blobs(
    spec: &JobSpec,
    fetcher: &crate::blob::BlobFetcher,
    progress: &(dyn Fn(&crate::blob::Progress) + Sync),
) -> Result<()> {
    for (_, blob) in spec.blobs() {
        fetcher.fetch(blob, progress).await?;
    }
    Ok(())
}
