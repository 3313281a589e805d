//! gpuchain's job runtime, shared by providers and verifiers.
//!
//! It turns a [`JobSpec`](gpuchain_jobspec::JobSpec) into a result: blobs are fetched over
//! HTTP and checked against their blake3 hash and size ([`blob`]); inference runs the digits
//! MLP and CNN, the all-MiniLM-L6-v2 sentence embedder or a Llama-style decoder on burn
//! (CPU backend by default, CUDA behind the `cuda` feature when NVML sees a GPU); training
//! runs data-parallel rounds with top-k-sparsified, error-feedback updates and a Merkle
//! transcript ([`train`]). A deterministic single-threaded [`canonical`] path settles
//! disputes, and [`compare()`] decides whether two results agree within the job kind's
//! tolerance.
//!
//! Entry points: [`run_job`], [`fetch_job_blobs`], [`compare()`], [`Backend::auto`],
//! [`hardware::probe`].

pub mod backend;
pub mod blob;
pub mod canonical;
pub mod compare;
pub mod digits;
pub mod embed;
mod error;
pub mod gguf;
pub mod hardware;
pub mod heap;
pub mod job;
pub mod llama;
pub mod models;
pub mod params;
pub mod serving;
pub mod tensor_io;
pub mod train;

pub use backend::Backend;
pub use compare::{between_replicas, compare, Metrics, Verdict};
pub use error::{Error, Result};
pub use job::{fetch_job_blobs, run_job, JobOutput};
