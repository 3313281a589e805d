//! Sequences generated a token at a time: one alone (streaming one answer), or many stepped
//! together, each pass over a decoder's weights feeding every one of its sequences its next
//! tokens — a prompt being read, a chunk at a time, beside other sequences' last tokens.
//! A sequence can join or leave between any two steps (continuous batching), and what it
//! generates does not depend on which others it was stepped with beyond f32 rounding: its
//! sampler stream is its own.

use gpuchain_jobspec::Sampling;

use super::generate::{pick_token, row_rng};
use super::prefix::PrefixCache;
use super::rows::{Cache, RowDecoder};
use crate::models::init::SplitMix64;

/// One sequence being generated: see [`RowDecoder::start`].
pub struct Sequence<'a> {
    decoder: &'a RowDecoder,
    cache: Cache,
    prompt: Vec<u32>,
    /// Prompt tokens fed so far.
    read: usize,
    /// The last token given out, fed with the next step.
    pending: Option<u32>,
    rng: SplitMix64,
    sampling: Sampling,
}

impl RowDecoder {
    /// Starts generating after `prompt`, as row `row` of a job batch (whose index seeds its
    /// sampler stream). Nothing is computed until the sequence is stepped
    /// ([`Sequence::next_token`], or [`Sequence::step`] with others).
    pub fn start(&self, prompt: &[u32], sampling: &Sampling, row: usize) -> Sequence<'_> {
        Sequence {
            decoder: self,
            cache: self.empty_cache(),
            prompt: prompt.to_vec(),
            read: 0,
            pending: None,
            rng: row_rng(sampling, row),
            sampling: sampling.clone(),
        }
    }
}

/// What one sequence is fed in a step.
struct Feed {
    /// Its index among the stepped sequences.
    at: usize,
    tokens: Vec<u32>,
    /// Whether a token is picked after these (the prompt has been read).
    picks: bool,
}

impl<'a> Sequence<'a> {
    /// The next token, reading the whole prompt first if it has not been read; `None` only
    /// for a sequence started with an empty prompt (nothing to predict from).
    pub fn next_token(&mut self) -> Option<u32> {
        Sequence::step(&mut [self], usize::MAX).pop().flatten()
    }

    /// One step of each of `seqs`: a sequence still reading its prompt is fed up to
    /// `prompt_chunk` more of it, one generating is fed the token it gave out last, and the
    /// sequences of one decoder go through its weights together (each weight read once for
    /// all of them). Returns each sequence's next token, or `None` while its prompt is still
    /// being read (or for an empty prompt, which never gives one).
    pub fn step(seqs: &mut [&mut Sequence<'a>], prompt_chunk: usize) -> Vec<Option<u32>> {
        let mut next = vec![None; seqs.len()];
        let mut stepped = vec![false; seqs.len()];
        for first in 0..seqs.len() {
            if stepped[first] {
                continue;
            }
            let decoder = seqs[first].decoder;
            let feeds: Vec<Feed> = seqs
                .iter()
                .enumerate()
                .skip(first)
                .filter(|(_, s)| std::ptr::eq(s.decoder, decoder))
                .filter_map(|(at, s)| s.feed(at, prompt_chunk.max(1)))
                .collect();
            for (at, s) in seqs.iter().enumerate().skip(first) {
                if std::ptr::eq(s.decoder, decoder) {
                    stepped[at] = true;
                }
            }
            for (feed, token) in Sequence::forward(decoder, seqs, &feeds) {
                next[feed] = token;
            }
        }
        next
    }

    /// What this sequence (at `at`) is fed next, if anything.
    fn feed(&self, at: usize, prompt_chunk: usize) -> Option<Feed> {
        let unread = self.prompt.get(self.read..).unwrap_or_default();
        if !unread.is_empty() {
            let take = unread.len().min(prompt_chunk);
            return Some(Feed {
                at,
                tokens: unread[..take].to_vec(),
                picks: take == unread.len(),
            });
        }
        self.pending.map(|t| Feed {
            at,
            tokens: vec![t],
            picks: true,
        })
    }

    /// Runs `feeds` (ascending `at`, all of `decoder`'s sequences) through `decoder` at once;
    /// the tokens picked, by index.
    fn forward(
        decoder: &RowDecoder,
        seqs: &mut [&mut Sequence<'a>],
        feeds: &[Feed],
    ) -> Vec<(usize, Option<u32>)> {
        if feeds.is_empty() {
            return Vec::new();
        }
        let keep: Vec<usize> = feeds.iter().map(|f| usize::from(f.picks)).collect();
        let mut fed = feeds.iter().peekable();
        let mut steps = Vec::with_capacity(feeds.len());
        for (at, s) in seqs.iter_mut().enumerate() {
            if let Some(f) = fed.next_if(|f| f.at == at) {
                steps.push((f.tokens.as_slice(), &mut s.cache));
            }
        }
        let mut logits = decoder.forward_keeping(&mut steps, &keep).into_iter();
        let mut picked = Vec::with_capacity(feeds.len());
        for f in feeds {
            let Some(s) = seqs.get_mut(f.at) else {
                continue;
            };
            if s.read < s.prompt.len() {
                s.read += f.tokens.len();
            }
            s.pending = None;
            let token = if f.picks {
                logits
                    .next()
                    .map(|l| pick_token(&l, &s.sampling, &mut s.rng))
            } else {
                None
            };
            s.pending = token;
            picked.push((f.at, token));
        }
        picked
    }

    /// Tokens in the context so far (prompt and fed tokens).
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// Whether nothing has been fed yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the prompt has been read and tokens are being generated.
    pub fn generating(&self) -> bool {
        self.read >= self.prompt.len()
    }

    /// Starts from the keys and values of the longest beginning of the prompt that
    /// `prefixes` holds, if nothing has been read yet; returns the prompt tokens so skipped.
    pub fn reuse_prefix(&mut self, prefixes: &mut PrefixCache) -> usize {
        if self.read > 0 || !self.cache.is_empty() {
            return 0;
        }
        match prefixes.reuse(&self.prompt) {
            Some((shared, cache)) => {
                self.cache = cache;
                self.read = shared;
                shared
            }
            None => 0,
        }
    }

    /// Lends the prompt's keys and values to `prefixes` once the prompt has been read, for
    /// later prompts that begin the same way.
    pub fn share_prompt(&self, prefixes: &mut PrefixCache) {
        if self.generating() {
            prefixes.keep(&self.prompt, &self.cache);
        }
    }
}
