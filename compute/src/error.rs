//! The crate's error type.

use gpuchain_jobspec::{BlobHash, ModelArch, SpecError};

/// Everything that can go wrong while fetching blobs or running a job.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The job spec breaks a rule of `gpuchain-jobspec`.
    #[error("invalid job spec: {0}")]
    Spec(#[from] SpecError),
    /// A blob's bytes hash to something other than its reference says; it was discarded.
    #[error("blob hash mismatch: expected {expected}, got {actual}; the blob was discarded")]
    BlobHashMismatch {
        /// Hash in the reference.
        expected: BlobHash,
        /// Hash of the bytes received.
        actual: BlobHash,
    },
    /// A blob's size differs from its reference; it was discarded.
    #[error(
        "blob {hash} has {actual} bytes but its reference says {expected}; the blob was discarded"
    )]
    BlobSizeMismatch {
        /// The blob.
        hash: BlobHash,
        /// Size in the reference.
        expected: u64,
        /// Size received (or at least received, when the download was cut short).
        actual: u64,
    },
    /// No URL delivered a correct copy of the blob.
    #[error("could not fetch blob {hash}: {}", attempts.join("; "))]
    BlobUnavailable {
        /// The blob.
        hash: BlobHash,
        /// One line per URL tried, saying what went wrong.
        attempts: Vec<String>,
    },
    /// The blob is not in the local store.
    #[error("blob {0} is not in the local store; fetch it first")]
    BlobMissing(BlobHash),
    /// The architecture cannot run this kind of job.
    #[error("{arch:?} cannot run {what}")]
    Unsupported {
        /// Architecture.
        arch: ModelArch,
        /// What was asked.
        what: &'static str,
    },
    /// The input blob has the wrong encoding or shape.
    #[error("bad input: {0}")]
    BadInput(String),
    /// The weights blob lacks a tensor or has one of the wrong shape.
    #[error("bad weights: {0}")]
    BadWeights(String),
    /// The job needs more device memory than the device has.
    #[error("job does not fit: needs about {needed_bytes} bytes of device memory, {available_bytes} available")]
    DoesNotFit {
        /// Estimated need.
        needed_bytes: u64,
        /// Device memory available.
        available_bytes: u64,
    },
    /// A tokenizer could not be loaded or failed.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The dataset could not be read.
    #[error("dataset: {0}")]
    Dataset(String),
    /// A training message, checkpoint or transcript is malformed.
    #[error("training: {0}")]
    Training(String),
    /// The requested backend is not available on this machine or build.
    #[error("backend unavailable: {0}")]
    BackendUnavailable(String),
    /// File system error.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, Error>;
