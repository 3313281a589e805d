//! Keys and values of prompts read before, kept so that a later prompt that begins the same
//! way (the chat template and system message every chat request starts with, or the earlier
//! turns of a conversation) starts from them instead of reading its beginning again. Under
//! causal attention the cache of a prompt's first `m` tokens is the cache of any prompt with
//! those `m` tokens first, so one entry serves every prompt that shares any part of its
//! beginning. What is reused differs from reading it again only by f32 rounding (which
//! tokens were read together), as a sequence stepped beside others does.

use super::rows::Cache;

/// Shorter shared beginnings are read again: reusing them saves less than the copy costs.
pub const MIN_REUSED_TOKENS: usize = 8;

/// One prompt's tokens and its cache, as it was when the prompt had been read.
struct Entry {
    tokens: Vec<u32>,
    cache: Cache,
    bytes: usize,
    /// When it was last reused or stored: the least recent goes first.
    used: u64,
}

/// The prompts of one decoder read before, within a memory budget.
pub struct PrefixCache {
    entries: Vec<Entry>,
    budget_bytes: usize,
    held_bytes: usize,
    clock: u64,
    reused_tokens: u64,
}

impl PrefixCache {
    /// An empty cache holding at most `budget_bytes` of keys and values (0: it keeps
    /// nothing).
    pub fn new(budget_bytes: usize) -> PrefixCache {
        PrefixCache {
            entries: Vec::new(),
            budget_bytes,
            held_bytes: 0,
            clock: 0,
            reused_tokens: 0,
        }
    }

    /// Bytes of keys and values held.
    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    /// Prompt tokens not read again because they were reused, since the cache was made.
    pub fn reused_tokens(&self) -> u64 {
        self.reused_tokens
    }

    /// The cache of the longest beginning of `prompt` held (at least [`MIN_REUSED_TOKENS`]
    /// tokens, and short of the whole prompt: its last token is always read, for the logits
    /// that pick the first new token), with its length.
    pub(super) fn reuse(&mut self, prompt: &[u32]) -> Option<(usize, Cache)> {
        let (at, shared) = self.longest(prompt)?;
        self.clock += 1;
        let entry = self.entries.get_mut(at)?;
        entry.used = self.clock;
        self.reused_tokens += shared as u64;
        Some((shared, entry.cache.first(shared)))
    }

    /// How many of `prompt`'s first tokens [`Self::reuse`] would give (0: none).
    pub(super) fn held(&self, prompt: &[u32]) -> usize {
        self.longest(prompt).map_or(0, |(_, shared)| shared)
    }

    /// The entry sharing the longest beginning with `prompt` (at least
    /// [`MIN_REUSED_TOKENS`] tokens, short of the whole prompt), and that length.
    fn longest(&self, prompt: &[u32]) -> Option<(usize, usize)> {
        let most = prompt.len().checked_sub(1)?;
        let (at, shared) = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let common = e.tokens.iter().zip(prompt).take_while(|(a, b)| a == b);
                (i, common.count().min(most))
            })
            .max_by_key(|&(i, shared)| (shared, std::cmp::Reverse(i)))?;
        (shared >= MIN_REUSED_TOKENS).then_some((at, shared))
    }

    /// Keeps `cache` as the cache of `prompt` (which it holds at least), making room by
    /// letting go of the least recently used prompts. A prompt already held, or the
    /// beginning of one held, adds nothing.
    pub(super) fn keep(&mut self, prompt: &[u32], cache: &Cache) {
        if prompt.len() < MIN_REUSED_TOKENS || cache.len() < prompt.len() {
            return;
        }
        self.clock += 1;
        if let Some(e) = self
            .entries
            .iter_mut()
            .find(|e| e.tokens.starts_with(prompt))
        {
            e.used = self.clock;
            return;
        }
        // Weighed before it is copied: a long prompt over the budget costs no copy.
        let bytes = cache.bytes() / cache.len().max(1) * prompt.len();
        if bytes > self.budget_bytes {
            return;
        }
        let cache = cache.first(prompt.len());
        // A held prompt that this one begins with is covered by it.
        self.entries.retain(|e| !prompt.starts_with(&e.tokens));
        self.held_bytes = self.entries.iter().map(|e| e.bytes).sum();
        while self.held_bytes + bytes > self.budget_bytes {
            let Some(oldest) = self
                .entries
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| e.used)
                .map(|(i, _)| i)
            else {
                break;
            };
            let gone = self.entries.swap_remove(oldest);
            self.held_bytes -= gone.bytes;
        }
        self.entries.push(Entry {
            tokens: prompt.to_vec(),
            cache,
            bytes,
            used: self.clock,
        });
        self.held_bytes += bytes;
    }
}
