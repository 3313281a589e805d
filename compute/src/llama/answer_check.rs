//! Checking one served answer by teacher forcing: the answer's tokens after its prompt, each
//! a pick the model's own logits justify under the request's sampling (see [`super::check`]).

use gpuchain_jobspec::Sampling;

use super::check::plausible_pick;
use super::generate::row_rng;
use super::RowDecoder;

/// The first of `tokens` (generated after `prompt` with `sampling`, as row 0) that the
/// decoder's logits do not justify, if any.
pub fn first_unjustified(
    decoder: &RowDecoder,
    prompt: &[u32],
    tokens: &[u32],
    sampling: &Sampling,
) -> Option<usize> {
    let vocab = decoder.vocab();
    if let Some(bad) = tokens.iter().position(|t| *t as usize >= vocab) {
        return Some(bad);
    }
    let logits = decoder.teacher_forced_logits(prompt, tokens);
    let mut rng = row_rng(sampling, 0);
    tokens
        .iter()
        .zip(&logits)
        .position(|(t, at)| !plausible_pick(at, *t, sampling, &mut rng))
}
