//! The endpoint's Prometheus metrics (`GET /metrics`): requests by outcome, slots in use,
//! tokens generated and the time they took, time to first token, batch steps and sizes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use gpuchain_agent_kit::metrics::{metric, process_metrics};

/// Counters, updated by the handlers and the generation threads.
#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) chat_requests: AtomicU64,
    pub(crate) embedding_requests: AtomicU64,
    pub(crate) rejected_busy: AtomicU64,
    pub(crate) rejected_bad: AtomicU64,
    pub(crate) generated_tokens: AtomicU64,
    generation_micros: AtomicU64,
    first_token_micros: AtomicU64,
    first_tokens: AtomicU64,
    batch_steps: AtomicU64,
    batch_sequences: AtomicU64,
    batch_size: AtomicU64,
    prompt_tokens: AtomicU64,
    prompt_tokens_reused: AtomicU64,
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl Stats {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// A first token came `wait` after its request arrived.
    pub(crate) fn first_token(&self, wait: Duration) {
        Stats::add(&self.first_token_micros, micros(wait));
        Stats::add(&self.first_tokens, 1);
    }

    /// `tokens` more were generated in `took`.
    pub(crate) fn generated(&self, tokens: u64, took: Duration) {
        Stats::add(&self.generated_tokens, tokens);
        Stats::add(&self.generation_micros, micros(took));
    }

    /// A prompt of `tokens` joined a batch, `reused` of them read before (prefix cache).
    pub(crate) fn prompt(&self, tokens: usize, reused: usize) {
        Stats::add(&self.prompt_tokens, tokens as u64);
        Stats::add(&self.prompt_tokens_reused, reused as u64);
    }

    /// A batch took a step with `sequences` answers in it.
    pub(crate) fn step(&self, sequences: usize) {
        let n = sequences as u64;
        Stats::add(&self.batch_steps, 1);
        Stats::add(&self.batch_sequences, n);
        self.batch_size.store(n, Ordering::Relaxed);
    }

    /// The exposition text, with the slots in use out of `slots`.
    pub(crate) fn render(&self, busy: usize, slots: usize, weight_bytes: usize) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let secs = |c: &AtomicU64| get(c) as f64 / 1e6;
        let mut out = String::new();
        for (name, help, value) in [
            (
                "gpuchain_serve_chat_requests_total",
                "Chat completion requests started.",
                get(&self.chat_requests),
            ),
            (
                "gpuchain_serve_embedding_requests_total",
                "Embedding requests answered.",
                get(&self.embedding_requests),
            ),
            (
                "gpuchain_serve_rejected_busy_total",
                "Requests answered 429 because every slot was busy.",
                get(&self.rejected_busy),
            ),
            (
                "gpuchain_serve_rejected_bad_total",
                "Requests answered 4xx as malformed or not servable.",
                get(&self.rejected_bad),
            ),
            (
                "gpuchain_serve_generated_tokens_total",
                "Tokens generated.",
                get(&self.generated_tokens),
            ),
            (
                "gpuchain_serve_first_tokens_total",
                "Answers that reached their first token.",
                get(&self.first_tokens),
            ),
            (
                "gpuchain_serve_prompt_tokens_total",
                "Prompt tokens of the chat and text completions that joined a batch.",
                get(&self.prompt_tokens),
            ),
            (
                "gpuchain_serve_prompt_tokens_reused_total",
                "Prompt tokens not read again: an earlier prompt began the same way (prefix cache).",
                get(&self.prompt_tokens_reused),
            ),
            (
                "gpuchain_serve_batch_steps_total",
                "Steps of the generation batches (one pass over a model's weights each).",
                get(&self.batch_steps),
            ),
            (
                "gpuchain_serve_batch_sequences_total",
                "Answers stepped, summed over steps (divide by batch_steps_total: mean batch size).",
                get(&self.batch_sequences),
            ),
        ] {
            metric(&mut out, name, "counter", help, value);
        }
        metric(
            &mut out,
            "gpuchain_serve_generation_seconds_total",
            "counter",
            "Time spent generating, summed over requests.",
            secs(&self.generation_micros),
        );
        metric(
            &mut out,
            "gpuchain_serve_first_token_seconds_total",
            "counter",
            "Time from request to first token, summed (divide by first_tokens_total).",
            secs(&self.first_token_micros),
        );
        metric(
            &mut out,
            "gpuchain_serve_busy_slots",
            "gauge",
            "Requests generating now.",
            busy,
        );
        metric(
            &mut out,
            "gpuchain_serve_batch_size",
            "gauge",
            "Answers in the last step of a generation batch.",
            get(&self.batch_size),
        );
        metric(
            &mut out,
            "gpuchain_serve_slots",
            "gauge",
            "Requests that can generate at once.",
            slots,
        );
        metric(
            &mut out,
            "gpuchain_serve_weight_bytes",
            "gauge",
            "Bytes the loaded chat models take (their files' sizes; the weights stay in their blocks).",
            weight_bytes,
        );
        process_metrics(&mut out);
        out
    }
}
