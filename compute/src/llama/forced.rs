//! Teacher-forced passes (a verifier's check of generated tokens) and their logits, kept as
//! the passes made them: one buffer a pass, a row's positions side by side in it. A
//! 128-token answer's logits over SmolLM2's vocabulary are 25 MB; a vector a position would
//! copy them once more and map that much fresh memory.
//!
//! With 8-bit activations on a CPU with integer dot products, and every layer's weights in
//! 4- or 8-bit blocks, a token's keys, values and hidden states are the same bits whichever
//! tokens it is read with (its activations are quantised a token at a time and its integer
//! sums are exact). Such a pass starts each prompt from the keys and values of the longest
//! beginning it shares with prompts read before (a chat template's system message, the same
//! job's prompts checked for another replica), and reads a beginning its rows share once for
//! all of them: the check reads fewer tokens and its verdict does not change by a bit. Other
//! passes (f32 activations, or layers in f32, F16, Q5_K or Q6_K, multiplied in f32), whose
//! sums round differently with the company a token keeps, read every prompt whole.

use std::ops::Range;
use std::sync::MutexGuard;

use super::prefix::{PrefixCache, MIN_REUSED_TOKENS};
use super::rows::{Cache, RowDecoder};
use super::Activations;

/// Most tokens one teacher-forced pass over several rows takes (its activations: a few MB a
/// layer), unless one row alone is longer.
pub const TEACHER_FORCED_TOKENS: usize = 2048;

/// Keys and values of checked prompts a decoder keeps for later passes: for SmolLM2-135M
/// (46 KB a token) about 700 tokens, some twenty chat prompts.
pub(super) const CHECKED_PROMPTS_BYTES: usize = 32 << 20;

/// Each row's logits after each token of its continuation, `vocab` values a position.
#[derive(Debug, Clone, Default)]
pub struct ForcedLogits {
    vocab: usize,
    passes: Vec<Vec<f32>>,
    /// Per row: its pass, and where its values lie there.
    rows: Vec<(usize, Range<usize>)>,
}

impl ForcedLogits {
    pub(super) fn new(vocab: usize) -> ForcedLogits {
        ForcedLogits {
            vocab,
            ..ForcedLogits::default()
        }
    }

    /// Adds a pass's logits, the positions of each of its rows one after another
    /// (`positions[i]` of them for its row `i`, in order).
    pub(super) fn push_pass(&mut self, values: Vec<f32>, positions: &[usize]) {
        let pass = self.passes.len();
        let mut at = 0;
        for n in positions {
            let end = (at + n * self.vocab).min(values.len());
            self.rows.push((pass, at..end));
            at = end;
        }
        self.passes.push(values);
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no row is held.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Values a position.
    pub fn vocab(&self) -> usize {
        self.vocab
    }

    /// Row `i`'s logits, position after position (empty past the last row): position `j`
    /// is what picks its continuation's token `j`.
    pub fn row(&self, i: usize) -> &[f32] {
        self.rows
            .get(i)
            .and_then(|(pass, range)| self.passes.get(*pass)?.get(range.clone()))
            .unwrap_or(&[])
    }

    /// Row `i`'s logits a position.
    pub fn positions(&self, i: usize) -> std::slice::ChunksExact<'_, f32> {
        self.row(i).chunks_exact(self.vocab.max(1))
    }
}

impl RowDecoder {
    /// Teacher forcing in one pass: the logits the model has, after `prompt`, at each token
    /// of `continuation` (before it is fed): entry `j` is what picks `continuation[j]`.
    /// The pass runs the fast products ([`Activations::Int8`]), so its logits sit one
    /// activation rounding from those generation had: a check confirms a fault in f32.
    pub fn teacher_forced_logits(&self, prompt: &[u32], continuation: &[u32]) -> Vec<Vec<f32>> {
        self.teacher_forced_logits_with(prompt, continuation, Activations::Int8)
    }

    /// [`Self::teacher_forced_logits`] with every product's activations treated as
    /// `activations` says ([`Activations::F32`]: as generation has them).
    pub fn teacher_forced_logits_with(
        &self,
        prompt: &[u32],
        continuation: &[u32],
        activations: Activations,
    ) -> Vec<Vec<f32>> {
        self.teacher_forced_rows(&[(prompt, continuation)], activations)
            .positions(0)
            .map(<[f32]>::to_vec)
            .collect()
    }

    /// [`Self::teacher_forced_logits_with`] for several `(prompt, continuation)` rows,
    /// passes of up to [`TEACHER_FORCED_TOKENS`] tokens: the rows of a pass go through each
    /// projection together, each weight read (and packed, for 8-bit activations) once for
    /// all of them. Row `i` holds row `i`'s logits, as its own pass gives them.
    pub fn teacher_forced_rows(
        &self,
        rows: &[(&[u32], &[u32])],
        activations: Activations,
    ) -> ForcedLogits {
        let fed: Vec<Vec<u32>> = rows
            .iter()
            .map(|(prompt, continuation)| match continuation.split_last() {
                Some((_, fed)) => [*prompt, fed].concat(),
                None => Vec::new(),
            })
            .collect();
        // Reading a token with others gives the bits it gets alone only in these passes.
        let reuse = self.layers_int8(activations);
        let mut out = ForcedLogits::new(self.vocab());
        let mut first = 0;
        while first < rows.len() {
            // At least one row a pass, then as many as fit.
            let mut end = first + 1;
            let mut tokens = fed[first].len();
            while end < rows.len() && tokens + fed[end].len() <= TEACHER_FORCED_TOKENS {
                tokens += fed[end].len();
                end += 1;
            }
            // As `forward_with` keeps them: no more than the row feeds (nothing for a row
            // without tokens to check).
            let positions: Vec<usize> = (first..end)
                .map(|i| rows[i].1.len().min(fed[i].len()))
                .collect();
            let live: Vec<usize> = (first..end).filter(|&i| !fed[i].is_empty()).collect();
            let prompts: Vec<&[u32]> = live.iter().map(|&i| rows[i].0).collect();
            let (read, mut caches): (Vec<usize>, Vec<Cache>) = if reuse {
                self.prompt_starts(&prompts).into_iter().unzip()
            } else {
                live.iter().map(|_| (0, self.empty_cache())).unzip()
            };
            let mut steps: Vec<(&[u32], &mut Cache)> = live
                .iter()
                .zip(&read)
                .map(|(&i, &read)| &fed[i][read..])
                .zip(caches.iter_mut())
                .collect();
            let keep: Vec<usize> = live.iter().map(|&i| rows[i].1.len()).collect();
            let logits = if live.is_empty() {
                Vec::new()
            } else {
                self.forward_with(&mut steps, &keep, activations)
            };
            if reuse {
                let mut held = self.checked_prompts();
                for (prompt, cache) in prompts.iter().zip(&caches) {
                    held.keep(prompt, cache);
                }
            }
            out.push_pass(logits, &positions);
            first = end;
        }
        out
    }

    /// Where each of `prompts` starts, for a pass with 8-bit activations: the tokens
    /// already read, and their keys and values. The beginning all of them share (short of
    /// each one's last token) is read first, once, unless every prompt can start past it.
    fn prompt_starts(&self, prompts: &[&[u32]]) -> Vec<(usize, Cache)> {
        let shared = shared_beginning(prompts);
        let head = match prompts.first() {
            Some(first)
                if prompts.len() > 1
                    && shared >= MIN_REUSED_TOKENS
                    && prompts
                        .iter()
                        .any(|p| self.checked_prompts().held(p) < shared) =>
            {
                let head = &first[..shared];
                let held = self.checked_prompts().reuse(head);
                let (read, mut cache) = held.unwrap_or_else(|| (0, self.empty_cache()));
                let _ =
                    self.forward_with(&mut [(&head[read..], &mut cache)], &[0], Activations::Int8);
                self.checked_prompts().keep(head, &cache);
                Some(cache)
            }
            _ => None,
        };
        let mut held = self.checked_prompts();
        prompts
            .iter()
            .map(|p| match (held.reuse(p), &head) {
                (Some((read, cache)), _) if read >= shared => (read, cache),
                // The head was not kept (a cache too small for it).
                (_, Some(head)) => (shared, head.first(shared)),
                (reused, None) => reused.unwrap_or_else(|| (0, self.empty_cache())),
            })
            .collect()
    }

    /// The keys and values of prompts read by passes with 8-bit activations, locked.
    fn checked_prompts(&self) -> MutexGuard<'_, PrefixCache> {
        // A poisoned lock only means a panic elsewhere mid-update; the entries are whole.
        self.checked_prompts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Prompt tokens that rows of passes with 8-bit activations started past, their keys
    /// and values read by an earlier pass or once for all the rows of theirs.
    pub fn checked_prompt_tokens_reused(&self) -> u64 {
        self.checked_prompts().reused_tokens()
    }

    /// Forgets the prompts passes have read (a benchmark's check of a prompt never seen).
    pub fn forget_checked_prompts(&self) {
        *self.checked_prompts() = PrefixCache::new(CHECKED_PROMPTS_BYTES);
    }
}

/// How many first tokens all of `prompts` share, short of the shortest one's last token.
fn shared_beginning(prompts: &[&[u32]]) -> usize {
    let Some((first, rest)) = prompts.split_first() else {
        return 0;
    };
    rest.iter().fold(first.len().saturating_sub(1), |n, p| {
        let common = first
            .iter()
            .zip(p.iter())
            .take_while(|(a, b)| a == b)
            .count();
        n.min(common).min(p.len().saturating_sub(1))
    })
}
