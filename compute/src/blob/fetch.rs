//! Streaming HTTP fetcher that verifies blake3 and size and falls back to other mirrors.

use std::io::Write;
use std::path::PathBuf;

use futures::StreamExt;
use gpuchain_jobspec::BlobRef;

use super::policy::FetchPolicy;
use super::store::verify;
use super::BlobStore;
use crate::{Error, Result};

/// Download progress of one blob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    /// URL being read.
    pub url: String,
    /// Bytes received so far.
    pub received: u64,
    /// Expected total.
    pub total: u64,
}

/// Fetches blobs over HTTP into a [`BlobStore`].
#[derive(Clone, Debug)]
pub struct BlobFetcher {
    client: reqwest::Client,
    store: BlobStore,
    policy: FetchPolicy,
}

impl BlobFetcher {
    /// A fetcher writing into `store` that reaches public hosts only
    /// ([`FetchPolicy::public_hosts`]).
    pub fn new(store: BlobStore) -> Result<Self> {
        Self::with_policy(store, FetchPolicy::public_hosts())
    }

    /// A fetcher writing into `store` under `policy`.
    pub fn with_policy(store: BlobStore, policy: FetchPolicy) -> Result<Self> {
        let client = policy
            .http_client()
            .map_err(|e| Error::BackendUnavailable(format!("http client: {e}")))?;
        Ok(Self {
            client,
            store,
            policy,
        })
    }

    /// The hosts this fetcher may reach.
    pub fn policy(&self) -> FetchPolicy {
        self.policy
    }

    /// The store blobs are written to.
    pub fn store(&self) -> &BlobStore {
        &self.store
    }

    /// Makes sure a verified copy of `blob` is in the store and returns its path. Uses the
    /// local copy when it verifies; otherwise tries each URL in order, streaming to a
    /// temporary file while hashing, and stops at the first copy whose size and hash match.
    pub async fn fetch(
        &self,
        blob: &BlobRef,
        progress: &(dyn Fn(&Progress) + Sync),
    ) -> Result<PathBuf> {
        if self.store.contains(&blob.hash()) {
            let path = self.store.path(&blob.hash());
            let bytes = tokio::fs::read(&path).await?;
            if verify(blob, &bytes).is_ok() {
                return Ok(path);
            }
            let _ = tokio::fs::remove_file(&path).await;
        }
        let mut attempts = Vec::new();
        for url in &blob.urls {
            match self.fetch_from(blob, url, progress).await {
                Ok(path) => return Ok(path),
                Err(e) => {
                    tracing::warn!(%url, error = %e, "blob fetch failed; trying next mirror");
                    attempts.push(format!("{url}: {e}"));
                }
            }
        }
        if attempts.is_empty() {
            attempts.push("no URLs in the blob reference and no local copy".into());
        }
        Err(Error::BlobUnavailable {
            hash: blob.hash(),
            attempts,
        })
    }

    async fn fetch_from(
        &self,
        blob: &BlobRef,
        url: &str,
        progress: &(dyn Fn(&Progress) + Sync),
    ) -> Result<PathBuf> {
        if let Some(why) = self.policy.refuse(url) {
            return Err(Error::BackendUnavailable(format!(
                "refused to fetch: {why}"
            )));
        }
        let http = |e: reqwest::Error| Error::BackendUnavailable(format!("http: {e:#}"));
        let resp = self.client.get(url).send().await.map_err(http)?;
        if !resp.status().is_success() {
            return Err(Error::BackendUnavailable(format!(
                "http status {}",
                resp.status()
            )));
        }
        let tmp = self.store.temp_path(&blob.hash());
        let result = self.stream_to(resp, blob, url, &tmp, progress).await;
        match result {
            Ok(()) => self.store.commit_temp(&tmp, &blob.hash()),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    async fn stream_to(
        &self,
        resp: reqwest::Response,
        blob: &BlobRef,
        url: &str,
        tmp: &std::path::Path,
        progress: &(dyn Fn(&Progress) + Sync),
    ) -> Result<()> {
        let mut file = std::io::BufWriter::new(std::fs::File::create(tmp)?);
        let mut hasher = blake3::Hasher::new();
        let mut received = 0u64;
        let mut last_report = 0u64;
        let mut stream = resp.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| Error::BackendUnavailable(format!("http body: {e}")))?;
            received += chunk.len() as u64;
            if received > blob.size {
                return Err(Error::BlobSizeMismatch {
                    hash: blob.hash(),
                    expected: blob.size,
                    actual: received,
                });
            }
            hasher.update(&chunk);
            file.write_all(&chunk)?;
            if received - last_report >= (1 << 20) || received == blob.size {
                last_report = received;
                progress(&Progress {
                    url: url.to_string(),
                    received,
                    total: blob.size,
                });
            }
        }
        file.flush()?;
        if received != blob.size {
            return Err(Error::BlobSizeMismatch {
                hash: blob.hash(),
                expected: blob.size,
                actual: received,
            });
        }
        let actual = gpuchain_jobspec::BlobHash(*hasher.finalize().as_bytes());
        if actual != blob.hash() {
            return Err(Error::BlobHashMismatch {
                expected: blob.hash(),
                actual,
            });
        }
        Ok(())
    }
}
