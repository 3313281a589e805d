//! Fetching a provider's revealed output from its blob server: `<endpoint>/blob/<hex hash>`,
//! size-capped, timed out, hash-checked. Verifiers fetch the outputs they judge; providers
//! fetch the other replicas' outputs they compare with their own.

use std::time::Duration;

use super::policy::FetchPolicy;
use super::store::hash_bytes;

/// Limits of one output fetch.
#[derive(Clone, Debug)]
pub struct OutputLimits {
    /// Whole fetch, connection to last byte.
    pub fetch_timeout: Duration,
    /// Largest output accepted.
    pub max_output_bytes: u64,
    /// Which hosts may be fetched from: endpoints are chosen by providers.
    pub policy: FetchPolicy,
}

/// Fetches `<endpoint>/blob/<hex>` and checks its blake3; `Err` says why the output is
/// unusable (refused host, HTTP failure, too large, timed out, or other bytes).
pub async fn fetch_output(
    http: &reqwest::Client,
    endpoint: &str,
    hash: &[u8; 32],
    limits: &OutputLimits,
) -> Result<Vec<u8>, String> {
    let url = format!(
        "{}/blob/{}",
        endpoint.trim_end_matches('/'),
        hex::encode(hash)
    );
    if let Some(why) = limits.policy.refuse(&url) {
        return Err(format!("GET {url}: refused: {why}"));
    }
    let get = async {
        let mut resp = http
            .get(&url)
            .send()
            .await
            .map_err(|e| format!("GET {url}: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("GET {url}: status {}", resp.status()));
        }
        let too_big = || format!("GET {url}: larger than {} bytes", limits.max_output_bytes);
        if resp.content_length().unwrap_or(0) > limits.max_output_bytes {
            return Err(too_big());
        }
        // The declared length may be absent or false: count what actually arrives.
        let mut bytes = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| format!("GET {url}: {e}"))? {
            if bytes.len() as u64 + chunk.len() as u64 > limits.max_output_bytes {
                return Err(too_big());
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    };
    let bytes = tokio::time::timeout(limits.fetch_timeout, get)
        .await
        .map_err(|_| format!("GET {url}: timed out"))??;
    if hash_bytes(&bytes).0 != *hash {
        return Err(format!(
            "output served at {url} hashes to {}, not the revealed result",
            hex::encode(hash_bytes(&bytes).0)
        ));
    }
    Ok(bytes)
}
