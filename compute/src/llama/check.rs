//! Checking a generation result by teacher forcing: one forward pass over each prompt
//! followed by the candidate's own tokens gives, at every generated position, the logits the
//! model had when it picked that token. Each token must be the pick those logits justify:
//! greedy, within a margin of the top logit; seeded, the token whose share of the top-k
//! mass holds the sampler's draw for that step, within a margin of its edges. The output
//! must be complete (every row, every token).
//!
//! Comparing tokens with a re-execution cannot tell an honest backend from a cheat: a
//! near-tie that flips on another backend changes the whole rest of the row, and a row whose
//! tail was never generated looks the same. Under teacher forcing a flip is one position
//! that sits on a near-tie, and every later token is judged on the candidate's own prefix.
//!
//! On the CPU the pass is the row decoder's (the weights in their stored precision, as the
//! CPU path generates); on CUDA it is burn's decoder over f32 weights.

use burn::prelude::*;
use gpuchain_jobspec::{InferenceSpec, Sampling};

use super::generate::{draw, generated_len, row_rng, top_k_weights};
use super::job::{burn_backend, load};
use super::Activations;
use crate::blob::BlobStore;
use crate::compare::{Metrics, Verdict};
use crate::models::burn_io::values;
use crate::models::init::SplitMix64;
use crate::tensor_io::{decode, Tensor as Stored};
use crate::{Backend, Error, Result};

/// A token passes when its logit is within this share of the row's logit spread (max − min)
/// of the top logit (greedy), or when the sampler's draw falls in its interval for some
/// logits each within that much of the verifier's (seeded; and always within this share of
/// the top-k mass of the interval). Backends differ by far less (f32 reductions in another
/// order, TF32 matmuls); a token the model did not favour sits far outside.
pub const TOKEN_MARGIN_PPM: u64 = 10_000;

/// Checks `candidate` as the output of the decoder job `s` by teacher forcing on `backend`.
pub fn check_generation(
    s: &InferenceSpec,
    store: &BlobStore,
    backend: Backend,
    candidate: &[u8],
) -> Result<Verdict> {
    let job = load(s, store)?;
    let (shape, gen, prompts) = (&job.shape, job.gen, &job.prompts);
    let (rows, new) = (prompts.len(), gen.max_new_tokens as usize);
    let tokens = match decode(candidate) {
        Ok(Stored::U32 { dims: d, data }) if d == [rows, new] => data,
        Ok(Stored::U32 { dims: d, .. }) => {
            return Ok(mismatch(format!(
                "incomplete output: shape {d:?}, the job generates {:?}",
                [rows, new]
            )))
        }
        Ok(_) => return Ok(mismatch("the output is not u32 token ids")),
        Err(e) => return Ok(mismatch(format!("the output is not a valid result: {e}"))),
    };
    if let Some(t) = tokens.iter().find(|t| **t >= shape.vocab_size) {
        return Ok(mismatch(format!("token id {t} is outside the vocabulary")));
    }
    if new == 0 {
        return Ok(Verdict::Identical);
    }
    let batch = (s.batch_size as usize).max(1);
    let mut passed = 0u64;
    let mut first_bad: Option<(usize, usize)> = None;
    let stops = &gen.stop_tokens;
    // Tokens each row generated (up to its first stop token); the rest must repeat that token.
    let generated: Vec<usize> = tokens
        .chunks(new)
        .map(|row| generated_len(row, stops))
        .collect();
    for (row, (answer, len)) in tokens.chunks(new).zip(&generated).enumerate() {
        if let Some(bad) = answer[*len..].iter().position(|t| *t != answer[len - 1]) {
            return Ok(mismatch(format!(
                "row {row}, token {}: the row goes on after its stop token",
                len + bad
            )));
        }
    }
    // How row `row` of the output fares against `logits` (at least as many rows of `vocab`
    // as it generated tokens): the tokens justified (the stop token's repeats are not
    // generated and pass) and the first that is not.
    let judge = |row: usize, logits: &[f32], vocab: usize| {
        // The sampler's stream of the row's place in its batch, as generation seeds it.
        let mut rng = row_rng(&gen.sampling, row % batch);
        let mut passed = (new - generated[row]) as u64;
        let mut bad = None;
        for (j, at) in logits.chunks_exact(vocab).take(generated[row]).enumerate() {
            if plausible_pick(at, tokens[row * new + j], &gen.sampling, &mut rng) {
                passed += 1;
            } else if bad.is_none() {
                bad = Some(j);
            }
        }
        (passed, bad)
    };
    let mut record = |row: usize, (justified, bad): (u64, Option<usize>)| {
        passed += justified;
        if let (None, Some(j)) = (first_bad, bad) {
            first_bad = Some((row, j));
        }
    };
    if burn_backend(backend) == Backend::Cpu {
        // The CPU path generates with the row decoder; it checks with it too: one pass over
        // each prompt and its answer, with the weights in their stored precision.
        // The pass runs the fast products, which read the prompt and answer with 8-bit
        // activations where the CPU has integer dot products, while generation had f32
        // ones: a row the fast pass faults is judged again from a pass in f32, and only that
        // verdict stands. An honest answer pays for one fast pass.
        // The rows go through the fast pass together; a row it faults is passed again alone.
        let decoder = job.row_decoder()?;
        let vocab = shape.vocab_size as usize;
        let answers: Vec<(&[u32], &[u32])> = prompts
            .iter()
            .enumerate()
            .map(|(row, prompt)| {
                (
                    prompt.as_slice(),
                    &tokens[row * new..row * new + generated[row]],
                )
            })
            .collect();
        let fast = decoder.teacher_forced_rows(&answers, Activations::Int8);
        for (row, answer) in answers.iter().enumerate() {
            let mut verdict = judge(row, fast.row(row), vocab);
            if verdict.1.is_some() && gpuchain_kernels::int8_products_fast() {
                let exact = decoder.teacher_forced_rows(&[*answer], Activations::F32);
                verdict = judge(row, exact.row(0), vocab);
            }
            record(row, verdict);
        }
    } else {
        crate::with_burn_backend!(burn_backend(backend), |B, device| {
            let model = job.cfg.load::<B>(&job.params()?, &device)?;
            for group in job.same_length_groups(batch) {
                let plen = prompts[group[0]].len();
                // Each sequence: its prompt, then every candidate token but the last.
                let len = plen + new - 1;
                let mut feed = Vec::with_capacity(group.len() * len);
                for &row in &group {
                    feed.extend(prompts[row].iter().map(|t| i64::from(*t)));
                    let answer = &tokens[row * new..(row + 1) * new];
                    feed.extend(answer[..new - 1].iter().map(|t| i64::from(*t)));
                }
                let ids = Tensor::<B, 2, Int>::from_data(
                    TensorData::new(feed, [group.len(), len]),
                    &device,
                );
                let logits = model.forward(ids, 0, None);
                let vocab = logits.dims()[2];
                let picked = values(logits.narrow(1, plen - 1, new));
                for (k, &row) in group.iter().enumerate() {
                    record(
                        row,
                        judge(row, &picked[k * new * vocab..(k + 1) * new * vocab], vocab),
                    );
                }
            }
            Ok::<(), Error>(())
        })?;
    }
    let total = (rows * new) as u64;
    let metrics = Metrics {
        agreement_ppm: passed * 1_000_000 / total.max(1),
        ..Metrics::default()
    };
    Ok(match first_bad {
        None => Verdict::WithinTolerance { metrics },
        Some((row, step)) => Verdict::Mismatch {
            reason: format!(
                "row {row}, token {step}: not a token the model picks from its own prefix \
                 ({} of {total} tokens justified)",
                passed
            ),
            metrics: Some(metrics),
        },
    })
}

fn mismatch(reason: impl Into<String>) -> Verdict {
    Verdict::Mismatch {
        reason: reason.into(),
        metrics: None,
    }
}

/// Whether `token` is a pick `logits` justify under `sampling`; advances `rng` by one draw
/// as generation does.
pub(crate) fn plausible_pick(
    logits: &[f32],
    token: u32,
    sampling: &Sampling,
    rng: &mut SplitMix64,
) -> bool {
    let margin = TOKEN_MARGIN_PPM as f32 / 1e6;
    let Some(&mine) = logits.get(token as usize) else {
        return false;
    };
    match sampling {
        Sampling::Greedy => {
            let top = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let low = logits.iter().copied().fold(f32::INFINITY, f32::min);
            top - mine <= (top - low) * margin
        }
        Sampling::Seeded {
            temperature_milli,
            top_k,
            top_p_ppm,
            ..
        } => {
            let (order, weights, total) = top_k_weights(logits, *temperature_milli, *top_k);
            // The draw, as a share of the mass, does not depend on the logits; the token's
            // interval does.
            let share = draw(rng, total, *top_p_ppm) / total;
            // Another backend's logits each sit within the greedy margin of the verifier's
            // (TF32 matmuls on a GPU move every logit a little). That scales each weight by
            // at most e^(slack / T) either way and can reorder tokens whose logits are
            // within twice the margin of each other: the token's interval starts no earlier
            // than the mass of the tokens surely above it allows, and ends no later than
            // that of the tokens possibly above it, itself included.
            let top = logits[order[0]];
            let low = logits.iter().copied().fold(f32::INFINITY, f32::min);
            let slack = (top - low) * margin;
            let t = *temperature_milli as f32 / 1000.0;
            let own = libm::expf((mine - top) / t);
            let last = order.len() - 1;
            let in_top = order.contains(&(token as usize));
            let mut total = total;
            if !in_top {
                // Just outside the verifier's top k, the token may have been inside the
                // provider's, in place of the k-th.
                if last == 0 || mine < logits[order[last]] - 2.0 * slack {
                    return false;
                }
                total += own - weights[last];
            }
            let (mut before, mut through) = (0.0f32, own);
            for (k, (w, i)) in weights.iter().zip(&order).enumerate() {
                if *i == token as usize || (!in_top && k == last) {
                    continue;
                }
                if logits[*i] > mine + 2.0 * slack {
                    before += w;
                }
                if logits[*i] >= mine - 2.0 * slack {
                    through += w;
                }
            }
            let s2 = libm::expf(2.0 * slack / t);
            let start = before / (before + (total - before) * s2);
            let end = through * s2 / (through * s2 + (total - through));
            share >= start.min(before / total - margin) && share < end.max(through / total + margin)
        }
    }
}
