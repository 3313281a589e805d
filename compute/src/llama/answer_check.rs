//! Checking one served answer by teacher forcing: the answer's tokens after its prompt, each
//! a pick the model's own logits justify under the request's sampling (see [`super::check`]).

use gpuchain_jobspec::Sampling;

use super::check::plausible_pick;
use super::generate::row_rng;
use super::{Activations, RowDecoder};

/// The first of `tokens` (generated after `prompt` with `sampling`, as row 0) that the
/// decoder's logits do not justify, if any. The pass runs the fast products (8-bit
/// activations); a token they do not justify is judged again from a pass with f32
/// activations, as generation had them, and only that pass's verdict stands.
pub fn first_unjustified(
    decoder: &RowDecoder,
    prompt: &[u32],
    tokens: &[u32],
    sampling: &Sampling,
) -> Option<usize> {
    let fast = first_unjustified_with(decoder, prompt, tokens, sampling, Activations::Int8);
    // Without integer dot products the fast products are the f32 ones: the verdict stands.
    if fast.is_none() || !gpuchain_kernels::int8_products_fast() {
        return fast;
    }
    first_unjustified_with(decoder, prompt, tokens, sampling, Activations::F32)
}

/// [`first_unjustified`] from one pass whose products treat their activations as
/// `activations` says.
pub fn first_unjustified_with(
    decoder: &RowDecoder,
    prompt: &[u32],
    tokens: &[u32],
    sampling: &Sampling,
    activations: Activations,
) -> Option<usize> {
    let vocab = decoder.vocab();
    if let Some(bad) = tokens.iter().position(|t| *t as usize >= vocab) {
        return Some(bad);
    }
    let logits = decoder.teacher_forced_rows(&[(prompt, tokens)], activations);
    let mut rng = row_rng(sampling, 0);
    tokens
        .iter()
        .zip(logits.positions(0))
        .position(|(t, at)| !plausible_pick(at, *t, sampling, &mut rng))
}
