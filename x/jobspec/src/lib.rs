//! Job-spec types for gpuchain compute orders.
//!
//! An order on chain carries a [`JobSpec`]: which model architecture to run, the
//! content-addressed blobs it needs ([`BlobRef`]: blake3 hash, size, mirror URLs) and its
//! settings. Inference jobs turn an input blob into an output blob; training jobs run
//! data-parallel rounds with compressed updates and produce a transcript root. Each job kind
//! also names the [`Tolerance`] a verifier uses when comparing two results.
//!
//! This crate is linked into consensus code, so it holds no floats, no hash maps and no clocks:
//! every fraction is a fixed-point integer in parts per million (ppm). [`JobSpec::validate`]
//! rejects specs that break the limits in [`limits`] with a typed [`SpecError`].

// Consensus code never panics: bad input is an error code that changes nothing.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::todo,
        clippy::unimplemented,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )
)]

mod answer;
mod arch;
mod blob;
mod error;
mod hexser;
pub mod limits;
mod spec;
mod tolerance;
mod training;
mod validate;

pub use answer::AnswerRecord;
pub use arch::{LlamaShape, ModelArch};
pub use blob::{BlobHash, BlobRef};
pub use error::SpecError;
pub use spec::{GenerationSpec, InferenceSpec, JobKind, JobSpec, Sampling};
pub use tolerance::Tolerance;
pub use training::{TrainingSpec, ValueBits, WeightsInit};

/// Result alias for spec validation.
pub type Result<T> = std::result::Result<T, SpecError>;

/// One million: the denominator of every ppm fraction in this crate.
pub const PPM: u32 = 1_000_000;
