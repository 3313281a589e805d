//! Test-only cheating, for the verification work (`run --dishonest <kind>`, hidden): each
//! kind changes one thing about how a result is produced or revealed; everything else about
//! the agent stays normal. Never use it on a real network: every kind is detectable and
//! slashable.

use gpuchain_compute::blob::BlobStore;
use gpuchain_jobspec::{BlobRef, JobSpec};
use rand_core::{OsRng, RngCore};
use serde::{Deserialize, Serialize};

/// How a dishonest agent cheats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Dishonest {
    /// Reveals random bytes of the right length.
    RandomOutput,
    /// Runs the model with perturbed weights (every f32 × 1.05).
    WrongModel,
    /// Runs the model with one weight tensor zeroed (a layer skipped).
    SkipLayer,
    /// Reveals the result of an earlier job (or of a shifted input when there is none).
    Stale,
    /// Commits to nothing real, waits for another replica's reveal and reveals that hash
    /// (fails commit-reveal).
    Copy,
    /// Commits honestly but reveals only after the reveal window (too late).
    LateReveal,
    /// Wins and never commits.
    Abandon,
    /// Computes honestly but says every other replica's output is inconsistent, so that its
    /// orders are disputed (a client's sybil trying to get an honest provider slashed).
    Deny,
    /// Computes and reveals the right hash but never serves the output: the client pays for
    /// bytes nobody can get unless payment waits for a fetch.
    Withhold,
}

/// Errors of the cheats.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CheatError {
    /// The weights are not a safetensors file of f32 tensors.
    #[error("weights are not f32 safetensors: {0}")]
    Weights(String),
    /// The blob store failed.
    #[error(transparent)]
    Compute(#[from] gpuchain_compute::Error),
}

/// Random bytes of `len`.
pub(crate) fn random_bytes(len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    OsRng.fill_bytes(&mut out);
    out
}

/// The job with its weights changed by `kind` (wrong-model, skip-layer) or its input
/// shifted by one row (stale without an earlier result); the new blobs go into `store`.
pub(crate) fn altered_spec(
    spec: &JobSpec,
    store: &BlobStore,
    kind: Dishonest,
) -> Result<JobSpec, CheatError> {
    let JobSpec::Inference(inner) = spec else {
        return Ok(spec.clone());
    };
    let mut out = inner.clone();
    let replace = |blob: &BlobRef, bytes: Vec<u8>| -> Result<BlobRef, CheatError> {
        let stored = store.put(&bytes)?;
        Ok(BlobRef {
            urls: blob.urls.clone(),
            ..stored
        })
    };
    match kind {
        Dishonest::WrongModel | Dishonest::SkipLayer => {
            let mut bytes = store.get(&inner.weights)?;
            alter_safetensors(&mut bytes, kind == Dishonest::SkipLayer)?;
            out.weights = replace(&inner.weights, bytes)?;
        }
        Dishonest::Stale => {
            let mut bytes = store.get(&inner.input)?;
            rotate_gct1_rows(&mut bytes);
            out.input = replace(&inner.input, bytes)?;
        }
        _ => {}
    }
    Ok(JobSpec::Inference(out))
}

/// Multiplies every f32 by 1.05, or (`zero_one`) zeroes the first weight tensor by name.
fn alter_safetensors(bytes: &mut [u8], zero_one: bool) -> Result<(), CheatError> {
    let bad = |m: &str| CheatError::Weights(m.to_string());
    let header_len = bytes
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| bad("too short"))?;
    let header_end = usize::try_from(header_len)
        .ok()
        .and_then(|n| n.checked_add(8))
        .ok_or_else(|| bad("header length"))?;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(bytes.get(8..header_end).ok_or_else(|| bad("header"))?)
            .map_err(|e| bad(&e.to_string()))?;
    let mut tensors: Vec<(&String, usize, usize)> = Vec::new();
    for (name, info) in &header {
        if name == "__metadata__" {
            continue;
        }
        if info["dtype"] != "F32" {
            return Err(bad(&format!("{name} is {}", info["dtype"])));
        }
        let off = |i: usize| {
            info["data_offsets"][i]
                .as_u64()
                .and_then(|v| usize::try_from(v).ok())
                .ok_or_else(|| bad("offsets"))
        };
        tensors.push((name, off(0)?, off(1)?));
    }
    tensors.sort();
    let data = bytes.get_mut(header_end..).ok_or_else(|| bad("data"))?;
    let chosen: Vec<_> = if zero_one {
        tensors
            .iter()
            .find(|(n, _, _)| n.ends_with("weight"))
            .into_iter()
            .copied()
            .collect()
    } else {
        tensors
    };
    for (_, start, end) in chosen {
        let region = data
            .get_mut(start..end)
            .ok_or_else(|| bad("offsets past the end"))?;
        for chunk in region.chunks_exact_mut(4) {
            let v = f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            let w = if zero_one { 0.0 } else { v * 1.05 };
            chunk.copy_from_slice(&w.to_le_bytes());
        }
    }
    Ok(())
}

/// Rotates the rows of a `GCT1` tensor by one (another input of the same shape); other
/// encodings get their bytes rotated.
fn rotate_gct1_rows(bytes: &mut [u8]) {
    let rank = bytes.get(5).copied().unwrap_or(0) as usize;
    let header = 8 + 4 * rank;
    let rows = bytes
        .get(8..12)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)
        .unwrap_or(0) as usize;
    if bytes.starts_with(b"GCT1") && rows > 1 && bytes.len() > header {
        let body = &mut bytes[header..];
        let row = body.len() / rows;
        body.rotate_left(row);
    } else if !bytes.is_empty() {
        bytes.rotate_left(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn safetensors() -> Vec<u8> {
        let header = br#"{"a.weight":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a.bias":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}"#;
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(header);
        for v in [1.0f32, 2.0, 4.0] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    fn floats(bytes: &[u8]) -> Vec<f32> {
        let n = bytes.len() - 12;
        bytes[n..]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    #[test]
    fn weights_are_perturbed_or_one_tensor_zeroed() {
        let mut w = safetensors();
        alter_safetensors(&mut w, false).unwrap();
        assert_eq!(floats(&w), [1.05, 2.1, 4.2]);
        let mut z = safetensors();
        alter_safetensors(&mut z, true).unwrap();
        assert_eq!(floats(&z), [0.0, 0.0, 4.0]);
        assert!(alter_safetensors(&mut [1, 2], false).is_err());
    }

    #[test]
    fn stale_inputs_are_the_same_rows_shifted() {
        let mut t = b"GCT1\x01\x02\x00\x00".to_vec();
        t.extend_from_slice(&2u32.to_le_bytes());
        t.extend_from_slice(&1u32.to_le_bytes());
        t.extend_from_slice(&[1, 1, 1, 1, 2, 2, 2, 2]);
        rotate_gct1_rows(&mut t);
        assert_eq!(&t[16..], &[2, 2, 2, 2, 1, 1, 1, 1]);
    }
}
