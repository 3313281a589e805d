//! The typed error returned by [`crate::JobSpec::validate`].

use crate::ModelArch;

/// Why a job spec was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// A blob is larger than the limit for its role.
    #[error("blob `{role}` is {size} bytes; the limit is {max} bytes")]
    BlobTooLarge {
        /// Which blob (`weights`, `input`, …).
        role: &'static str,
        /// Declared size.
        size: u64,
        /// Limit for this role.
        max: u64,
    },
    /// A blob has size zero.
    #[error("blob `{0}` has size 0")]
    EmptyBlob(&'static str),
    /// A blob lists too many URLs.
    #[error("blob `{role}` lists {count} URLs; at most {max} are allowed")]
    TooManyUrls {
        /// Which blob.
        role: &'static str,
        /// URLs given.
        count: usize,
        /// Limit.
        max: usize,
    },
    /// A blob URL is malformed.
    #[error("blob `{role}` has a bad URL `{url}`: it must start with http:// or https:// and be at most 2048 bytes")]
    BadUrl {
        /// Which blob.
        role: &'static str,
        /// The offending URL.
        url: String,
    },
    /// A blob required by the architecture is missing.
    #[error("{arch:?} needs a `{role}` blob")]
    MissingBlob {
        /// Architecture.
        arch: ModelArch,
        /// Missing blob's role.
        role: &'static str,
    },
    /// A numeric setting is outside its allowed range.
    #[error("`{field}` is {value}; it must be in {min}..={max}")]
    OutOfRange {
        /// Field name.
        field: &'static str,
        /// Given value.
        value: u64,
        /// Inclusive minimum.
        min: u64,
        /// Inclusive maximum.
        max: u64,
    },
    /// The architecture cannot be used for this job kind.
    #[error("{arch:?} is not supported for {kind} jobs")]
    UnsupportedArch {
        /// Architecture.
        arch: ModelArch,
        /// `inference` or `training`.
        kind: &'static str,
    },
    /// A setting only makes sense for another architecture.
    #[error("`{field}` is only allowed for {arch:?}")]
    NotApplicable {
        /// Field name.
        field: &'static str,
        /// The architecture the field belongs to.
        arch: ModelArch,
    },
    /// A tolerance stricter than honest replicas on different backends can meet: it would
    /// let a client have an honest provider judged wrong.
    #[error(
        "tolerance `{field}` is {value}; for {kind} jobs it may not be stricter than {limit} \
         (honest results on different backends differ that much)"
    )]
    ToleranceTooStrict {
        /// Tolerance field.
        field: &'static str,
        /// Given value.
        value: u32,
        /// The calibrated cross-backend default it may not be stricter than.
        limit: u32,
        /// Job kind.
        kind: &'static str,
    },
    /// A fine-tuning job without pretrained weights to start from.
    #[error("{arch:?} fine-tunes pretrained weights: `init` must be a weights blob, not a seed")]
    NeedsPretrainedWeights {
        /// Architecture.
        arch: ModelArch,
    },
    /// Llama shape is inconsistent.
    #[error("llama shape is inconsistent: {0}")]
    BadLlamaShape(&'static str),
}
