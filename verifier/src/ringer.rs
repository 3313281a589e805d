//! Preparing a ringer: take a job from the pool, draw a fresh input from its input rows
//! (so the order looks like ordinary traffic and its answer is not one a provider has seen),
//! compute the expected answer on the canonical path, and build the ordinary order the
//! poster will send. The commitment binds the poster, the expected hash and a salt
//! ([`gpuchain_verify::challenge_commitment`]). The expected output stays in the blob store:
//! before revealing, a result with other bytes is compared with it under the job's
//! tolerance, since an honest provider on another backend does not match it bit for bit.

use anyhow::{bail, Context, Result};
use gpuchain_auction::{MsgPostOrder, Requirements, TooFewBids};
use gpuchain_compute::blob::BlobStore;
use gpuchain_compute::{run_job, Backend};
use gpuchain_jobspec::JobSpec;

use crate::config::PoolJob;

/// Reads the pool job's spec.
pub(crate) fn load_spec(pool: &PoolJob) -> Result<JobSpec> {
    let text = std::fs::read_to_string(&pool.spec)
        .with_context(|| format!("reading ringer job {}", pool.spec.display()))?;
    let spec: JobSpec = serde_json::from_str(&text)
        .with_context(|| format!("parsing ringer job {}", pool.spec.display()))?;
    if !matches!(spec, JobSpec::Inference(_)) {
        bail!(
            "ringer jobs are inference jobs ({} is not)",
            pool.spec.display()
        );
    }
    Ok(spec)
}

/// `rows` rows drawn with replacement from a `GCT1` rank-2 tensor, by a blake3 stream of
/// `seed`. Other encodings are returned unchanged.
pub(crate) fn draw_rows(bytes: &[u8], rows: u32, seed: &[u8; 32]) -> Vec<u8> {
    let dims = |i: usize| {
        bytes
            .get(8 + 4 * i..12 + 4 * i)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
    };
    let (Some(n), Some(width)) = (dims(0), dims(1)) else {
        return bytes.to_vec();
    };
    let elem = 4usize;
    let row = width as usize * elem;
    let body = bytes.get(16..).unwrap_or(&[]);
    if !bytes.starts_with(b"GCT1")
        || bytes.get(5) != Some(&2)
        || n == 0
        || rows == 0
        || body.len() != n as usize * row
    {
        return bytes.to_vec();
    }
    let mut out = bytes[..8].to_vec();
    out.extend_from_slice(&rows.to_le_bytes());
    out.extend_from_slice(&width.to_le_bytes());
    let mut stream = blake3::Hasher::new_keyed(seed).finalize_xof();
    for _ in 0..rows {
        let mut pick = [0u8; 8];
        stream.fill(&mut pick);
        let i = (u64::from_le_bytes(pick) % u64::from(n)) as usize;
        out.extend_from_slice(&body[i * row..(i + 1) * row]);
    }
    out
}

/// A ready ringer: the order to post and its expected answer.
pub(crate) struct Prepared {
    pub(crate) order: MsgPostOrder,
    pub(crate) expected: [u8; 32],
}

/// Draws the input (served at `blob_url` when given), runs the job on the canonical path
/// and builds the order. The pool job's blobs must be in `store`. Blocking.
pub(crate) fn prepare(
    pool: &PoolJob,
    spec: &JobSpec,
    store: &BlobStore,
    blob_url: Option<&str>,
    seed: &[u8; 32],
) -> Result<Prepared> {
    let JobSpec::Inference(inner) = spec else {
        bail!("ringer jobs are inference jobs");
    };
    let mut inner = inner.clone();
    if let (Some(url), true) = (blob_url, pool.draw_rows > 0) {
        let drawn = draw_rows(&store.get(&inner.input)?, pool.draw_rows, seed);
        let stored = store.put(&drawn)?;
        let hex = stored.hash().to_hex();
        inner.input = gpuchain_jobspec::BlobRef {
            urls: vec![format!("{}/blob/{hex}", url.trim_end_matches('/'))],
            ..stored
        };
    }
    let job = JobSpec::Inference(inner);
    let out = run_job(&job, store, Backend::Canonical)
        .context("running the ringer on the canonical path")?;
    // Kept for the reveal: a result with other bytes is compared with it under tolerance.
    store.put(&out.bytes)?;
    Ok(Prepared {
        order: MsgPostOrder {
            job,
            requirements: Requirements {
                class: pool.class,
                gpu_model: None,
                min_vram_mib: 0,
                min_gpu_count: 0,
                min_cuda_version: 0,
                region: pool.region.clone(),
            },
            replicas: pool.replicas,
            max_price_per_replica: u128::from(pool.max_price_per_replica),
            bid_window_blocks: pool.bid_window_blocks,
            exec_deadline_blocks: pool.exec_deadline_blocks,
            on_too_few_bids: TooFewBids::Refund,
        },
        expected: out.hash.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(rows: u32) -> Vec<u8> {
        let mut t = b"GCT1\x01\x02\x00\x00".to_vec();
        t.extend_from_slice(&rows.to_le_bytes());
        t.extend_from_slice(&2u32.to_le_bytes());
        for r in 0..rows {
            for c in 0..2 {
                t.extend_from_slice(&((r * 10 + c) as f32).to_le_bytes());
            }
        }
        t
    }

    #[test]
    fn drawn_inputs_are_rows_of_the_pool_input_and_depend_on_the_seed() {
        let pool = tensor(5);
        let a = draw_rows(&pool, 8, &[1; 32]);
        assert_eq!(a.len(), 16 + 8 * 8);
        assert_eq!(&a[8..12], &8u32.to_le_bytes());
        for row in a[16..].chunks(8) {
            assert!(
                pool[16..].chunks(8).any(|p| p == row),
                "every row comes from the pool"
            );
        }
        assert_eq!(a, draw_rows(&pool, 8, &[1; 32]));
        assert_ne!(a, draw_rows(&pool, 8, &[2; 32]));
        assert_eq!(draw_rows(b"other", 3, &[1; 32]), b"other");
    }
}
