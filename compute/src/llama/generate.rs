//! Token generation: greedy or seeded top-k sampling, with or without the KV cache.

use burn::prelude::*;
use gpuchain_jobspec::Sampling;

use super::model::{KvCache, Llama};
use crate::models::burn_io::values;
use crate::models::init::SplitMix64;

/// The seeded sampler's candidates: the `top_k` largest logits (ties by id), their softmax
/// weights at the temperature (unnormalised, the top one 1.0) and the weights' sum.
pub(crate) fn top_k_weights(
    logits: &[f32],
    temperature_milli: u32,
    top_k: u32,
) -> (Vec<usize>, Vec<f32>, f32) {
    let by_logit = |a: &usize, b: &usize| logits[*b].total_cmp(&logits[*a]).then(a.cmp(b));
    let mut order: Vec<usize> = (0..logits.len()).collect();
    let k = (top_k as usize).clamp(1, logits.len().max(1));
    if k < order.len() {
        order.select_nth_unstable_by(k - 1, by_logit);
        order.truncate(k);
    }
    order.sort_by(by_logit);
    let t = temperature_milli as f32 / 1000.0;
    let top = logits[order[0]];
    let weights: Vec<f32> = order
        .iter()
        .map(|i| libm::expf((logits[*i] - top) / t))
        .collect();
    let total = weights.iter().sum();
    (order, weights, total)
}

/// Where a seeded sampler's draw falls: a point in the first `top_p_ppm` share of the top-k
/// mass `total`. Nucleus sampling this way keeps the token at the nucleus's edge with only
/// its part inside; unlike renormalising over the nucleus, logits a little different (a
/// verifier's) move the draw by their rounding, never by the weight of a whole token that
/// fell in or out.
pub(crate) fn draw(rng: &mut SplitMix64, total: f32, top_p_ppm: u32) -> f32 {
    rng.next_f32() * total * (top_p_ppm.min(1_000_000) as f32 / 1e6)
}

/// Picks the next token from one row of logits. Greedy: highest logit, ties to the lowest
/// id. Seeded: softmax at the temperature over the `top_k` largest logits (ties by id),
/// sampled with `rng` within the first `top_p` of their mass ([`draw`]).
pub fn pick_token(logits: &[f32], sampling: &Sampling, rng: &mut SplitMix64) -> u32 {
    match sampling {
        Sampling::Greedy => crate::canonical::math::argmax(logits) as u32,
        Sampling::Seeded {
            temperature_milli,
            top_k,
            top_p_ppm,
            ..
        } => {
            let (order, weights, total) = top_k_weights(logits, *temperature_milli, *top_k);
            let mut u = draw(rng, total, *top_p_ppm);
            for (w, i) in weights.iter().zip(&order) {
                if u < *w {
                    return *i as u32;
                }
                u -= w;
            }
            order[order.len() - 1] as u32
        }
    }
}

/// How many of a row's tokens were generated: up to and including its first stop token, or
/// all of them.
pub(crate) fn generated_len(row: &[u32], stops: &[u32]) -> usize {
    row.iter()
        .position(|t| stops.contains(t))
        .map_or(row.len(), |p| p + 1)
}

/// Ends each row (`rows × new` tokens) at its first stop token: the rest of the row repeats
/// it, as a generation job's output does.
pub(crate) fn end_at_stops(tokens: &mut [u32], new: usize, stops: &[u32]) {
    for row in tokens.chunks_mut(new.max(1)) {
        let len = generated_len(row, stops);
        if len < row.len() {
            let stop = row[len - 1];
            row[len..].iter_mut().for_each(|t| *t = stop);
        }
    }
}

/// The sampler stream of row `r` of a job batch: every replica and verifier draws the same.
pub(crate) fn row_rng(sampling: &Sampling, r: usize) -> SplitMix64 {
    let seed = match sampling {
        Sampling::Seeded { seed, .. } => *seed,
        Sampling::Greedy => 0,
    };
    SplitMix64::new(seed ^ (r as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Generates `new_tokens` after each prompt (`prompts: rows × prompt_len`). With
/// `use_cache`, the prompt is processed once and each step feeds one token; without, every
/// step re-runs the whole sequence. Returns `rows × new_tokens` ids.
pub fn generate<B: Backend>(
    model: &Llama<B>,
    prompts: &[u32],
    rows: usize,
    new_tokens: usize,
    sampling: &Sampling,
    use_cache: bool,
    device: &B::Device,
) -> Vec<u32> {
    let in_batch: Vec<usize> = (0..rows).collect();
    generate_at(
        model, prompts, &in_batch, new_tokens, sampling, use_cache, device,
    )
}

/// [`generate`] for rows that sit at `in_batch` in their job batch (one index a row), each
/// sampling from the stream of its place there.
pub fn generate_at<B: Backend>(
    model: &Llama<B>,
    prompts: &[u32],
    in_batch: &[usize],
    new_tokens: usize,
    sampling: &Sampling,
    use_cache: bool,
    device: &B::Device,
) -> Vec<u32> {
    let rows = in_batch.len();
    let plen = prompts.len() / rows.max(1);
    let mut rngs: Vec<SplitMix64> = in_batch.iter().map(|&r| row_rng(sampling, r)).collect();
    let mut seqs: Vec<Vec<u32>> = prompts.chunks(plen.max(1)).map(<[u32]>::to_vec).collect();
    let mut cache = KvCache::new();
    let ids = |rows_data: Vec<i64>, s: usize| {
        Tensor::<B, 2, Int>::from_data(TensorData::new(rows_data, [rows, s]), device)
    };
    for step in 0..new_tokens {
        let logits = if use_cache {
            let (start, feed): (usize, Vec<i64>) = if step == 0 {
                (0, seqs.iter().flatten().map(|t| i64::from(*t)).collect())
            } else {
                (
                    plen + step - 1,
                    seqs.iter().map(|s| i64::from(s[s.len() - 1])).collect(),
                )
            };
            let s = feed.len() / rows;
            model.forward(ids(feed, s), start, Some(&mut cache))
        } else {
            let len = plen + step;
            model.forward(
                ids(seqs.iter().flatten().map(|t| i64::from(*t)).collect(), len),
                0,
                None,
            )
        };
        let [_, s, vocab] = logits.dims();
        let last = values(logits.narrow(1, s - 1, 1).reshape([rows, vocab]));
        for (r, seq) in seqs.iter_mut().enumerate() {
            seq.push(pick_token(
                &last[r * vocab..(r + 1) * vocab],
                sampling,
                &mut rngs[r],
            ));
        }
    }
    seqs.iter().flat_map(|s| s[plen..].to_vec()).collect()
}
