//! The gateway's Prometheus metrics (`GET /metrics`): requests by kind and outcome,
//! retries, hedges and answers resumed on another provider, ringers passed and failed, time
//! to first token as the client sees it, and each provider's state as the gateway sees it.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use gpuchain_agent_kit::metrics::{metric, process_metrics};

use crate::pool::Pool;

/// Counters, updated by the handlers.
#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) chat_requests: AtomicU64,
    pub(crate) completion_requests: AtomicU64,
    pub(crate) embedding_requests: AtomicU64,
    pub(crate) answered: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) retried: AtomicU64,
    pub(crate) hedged: AtomicU64,
    pub(crate) resumed: AtomicU64,
    pub(crate) ringers_passed: AtomicU64,
    pub(crate) ringers_failed: AtomicU64,
    first_token_micros: AtomicU64,
    first_tokens: AtomicU64,
}

impl Stats {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// A first token reached the client `wait` after its request arrived.
    pub(crate) fn first_token(&self, wait: Duration) {
        let micros = u64::try_from(wait.as_micros()).unwrap_or(u64::MAX);
        Stats::add(&self.first_token_micros, micros);
        Stats::add(&self.first_tokens, 1);
    }

    /// The exposition text.
    pub(crate) fn render(&self, pool: &Pool) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut out = String::new();
        for (name, help, value) in [
            (
                "gpuchain_gateway_chat_requests_total",
                "Chat completion requests received.",
                get(&self.chat_requests),
            ),
            (
                "gpuchain_gateway_completion_requests_total",
                "Text completion requests received.",
                get(&self.completion_requests),
            ),
            (
                "gpuchain_gateway_embedding_requests_total",
                "Embedding requests received.",
                get(&self.embedding_requests),
            ),
            (
                "gpuchain_gateway_answered_total",
                "Requests answered in full.",
                get(&self.answered),
            ),
            (
                "gpuchain_gateway_refused_total",
                "Requests refused as the client's fault (4xx).",
                get(&self.refused),
            ),
            (
                "gpuchain_gateway_failed_total",
                "Requests no provider could answer, or whose answer broke off.",
                get(&self.failed),
            ),
            (
                "gpuchain_gateway_retried_total",
                "Tries that moved on to another provider.",
                get(&self.retried),
            ),
            (
                "gpuchain_gateway_hedged_total",
                "Slow tries raced against a second provider.",
                get(&self.hedged),
            ),
            (
                "gpuchain_gateway_resumed_total",
                "Answers resumed on another provider after theirs broke off.",
                get(&self.resumed),
            ),
            (
                "gpuchain_gateway_ringers_passed_total",
                "Ringers (requests of known answer) answered right.",
                get(&self.ringers_passed),
            ),
            (
                "gpuchain_gateway_ringers_failed_total",
                "Ringers answered wrong: each catches its provider.",
                get(&self.ringers_failed),
            ),
            (
                "gpuchain_gateway_first_tokens_total",
                "Answers whose first token reached the client.",
                get(&self.first_tokens),
            ),
        ] {
            metric(&mut out, name, "counter", help, value);
        }
        metric(
            &mut out,
            "gpuchain_gateway_first_token_seconds_total",
            "counter",
            "Time from a request's arrival to its first token at the client, summed.",
            get(&self.first_token_micros) as f64 / 1e6,
        );
        upstream_metrics(&mut out, pool);
        process_metrics(&mut out);
        out
    }
}

/// An upstream's labels: its URL, and the one model it is limited to (a lease's), if any.
fn labels(u: &crate::pool::Upstream) -> String {
    let escape = |v: &str| v.replace('\\', "\\\\").replace('"', "\\\"");
    match &u.spec.model {
        Some(model) => format!(
            "upstream=\"{}\",model=\"{}\"",
            escape(&u.spec.url),
            escape(model)
        ),
        None => format!("upstream=\"{}\"", escape(&u.spec.url)),
    }
}

/// One labelled series per upstream for each of its figures.
fn upstream_metrics(out: &mut String, pool: &Pool) {
    let series: [(&str, &str, &str); 8] = [
        ("up", "gauge", "1 if the provider answers."),
        (
            "caught",
            "gauge",
            "1 if it answered a ringer wrong (never routed to again).",
        ),
        (
            "suspended",
            "gauge",
            "1 while a faulty verdict on its lease stands or is under appeal (not routed to).",
        ),
        ("latency_seconds", "gauge", "Smoothed time to first token."),
        ("in_flight", "gauge", "Requests running there now."),
        ("requests_total", "counter", "Tries sent there."),
        ("failures_total", "counter", "Tries that failed there."),
        ("down_total", "counter", "Times it stopped answering."),
    ];
    for (name, kind, help) in series {
        let name = format!("gpuchain_gateway_upstream_{name}");
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for u in &pool.upstreams() {
            let h = u.snapshot();
            let value = match name.trim_start_matches("gpuchain_gateway_upstream_") {
                "up" => f64::from(u8::from(h.up)),
                "caught" => f64::from(u8::from(u.is_caught())),
                "suspended" => f64::from(u8::from(u.is_suspended())),
                "latency_seconds" => h.latency_ms.unwrap_or(0.0) / 1e3,
                "in_flight" => u.in_flight.load(Ordering::Relaxed) as f64,
                "requests_total" => u.requests.load(Ordering::Relaxed) as f64,
                "failures_total" => u.failures.load(Ordering::Relaxed) as f64,
                _ => u.went_down.load(Ordering::Relaxed) as f64,
            };
            let _ = writeln!(out, "{name}{{{}}} {value}", labels(u));
        }
    }
}
