//! Content-addressed blobs: a local store, an HTTP fetcher and an HTTP server.
//!
//! Every path that brings bytes in (fetch, upload, read from disk) checks blake3 and size
//! against the [`BlobRef`](gpuchain_jobspec::BlobRef); a blob that fails is deleted and
//! never handed to a model.

mod fetch;
mod output;
mod policy;
mod server;
mod store;

pub use fetch::{BlobFetcher, Progress};
pub use output::{fetch_output, OutputLimits};
pub use policy::{is_public, FetchPolicy};
pub use server::{serve, BlobServer, DEFAULT_MAX_UPLOAD_BYTES};
pub use store::{hash_bytes, BlobStore};
