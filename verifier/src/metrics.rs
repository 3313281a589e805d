//! Prometheus metrics over plain HTTP (`GET /metrics`, served by
//! `gpuchain_agent_kit::metrics`): assignments, verdicts by kind, fetch failures, training audits,
//! challenges, and the process's CPU seconds and resident memory.

use std::fmt::Write as _;
use std::net::SocketAddr;

use gpuchain_agent_kit::metrics::{self, metric, process_metrics};

use crate::state::Counters;

/// What the agent publishes.
#[derive(Clone, Debug, Default)]
pub(crate) struct Gauges {
    pub(crate) counters: Counters,
    pub(crate) height: u64,
    pub(crate) checking: u32,
    pub(crate) open_ringers: u32,
    pub(crate) bonded: u128,
}

/// Shared between the agent and the server.
pub(crate) type Shared = metrics::Shared<Gauges>;

/// Binds `addr` and serves the agent's gauges until the runtime stops; returns the bound
/// address.
pub(crate) async fn serve(addr: SocketAddr, shared: Shared) -> std::io::Result<SocketAddr> {
    metrics::serve_gauges(addr, shared, render).await
}

/// The exposition text.
pub(crate) fn render(g: &Gauges) -> String {
    let c = &g.counters;
    let mut out = String::new();
    metric(
        &mut out,
        "gpuchain_verifier_assignments_total",
        "counter",
        "Assignments taken (lease, round).",
        c.assignments,
    );
    let _ = writeln!(out, "# HELP gpuchain_verifier_verdicts_total Verdicts posted on chain, by kind.\n# TYPE gpuchain_verifier_verdicts_total counter");
    let _ = writeln!(
        out,
        "gpuchain_verifier_verdicts_total{{verdict=\"honest\"}} {}",
        c.verdicts_honest
    );
    let _ = writeln!(
        out,
        "gpuchain_verifier_verdicts_total{{verdict=\"faulty\"}} {}",
        c.verdicts_faulty
    );
    metric(
        &mut out,
        "gpuchain_verifier_verdicts_failed_total",
        "counter",
        "Assignments that got no verdict (could not check or post).",
        c.verdicts_failed,
    );
    metric(
        &mut out,
        "gpuchain_verifier_fetch_failures_total",
        "counter",
        "Provider outputs that could not be fetched or did not match their hash.",
        c.fetch_failures,
    );
    metric(
        &mut out,
        "gpuchain_verifier_training_audits_total",
        "counter",
        "Training segments audited.",
        c.training_audits,
    );
    metric(
        &mut out,
        "gpuchain_verifier_challenges_committed_total",
        "counter",
        "Ringer challenges committed.",
        c.challenges_committed,
    );
    metric(
        &mut out,
        "gpuchain_verifier_challenges_revealed_total",
        "counter",
        "Ringer challenges revealed.",
        c.challenges_revealed,
    );
    metric(
        &mut out,
        "gpuchain_verifier_challenges_abandoned_total",
        "counter",
        "Ringer challenges given up.",
        c.challenges_abandoned,
    );
    metric(
        &mut out,
        "gpuchain_verifier_challenge_leases_failed_total",
        "counter",
        "Ringer leases that returned a wrong answer.",
        c.challenge_leases_failed,
    );
    metric(
        &mut out,
        "gpuchain_verifier_challenge_leases_passed_total",
        "counter",
        "Ringer leases that returned the expected answer.",
        c.challenge_leases_passed,
    );
    metric(
        &mut out,
        "gpuchain_verifier_orders_seen_total",
        "counter",
        "Orders seen (the ringer rate's base).",
        c.orders_seen,
    );
    metric(
        &mut out,
        "gpuchain_verifier_chain_height",
        "gauge",
        "Last block processed.",
        g.height,
    );
    metric(
        &mut out,
        "gpuchain_verifier_checking",
        "gauge",
        "Re-executions in flight.",
        g.checking,
    );
    metric(
        &mut out,
        "gpuchain_verifier_open_ringers",
        "gauge",
        "Ringers not yet revealed.",
        g.open_ringers,
    );
    metric(
        &mut out,
        "gpuchain_verifier_bonded_ugpu",
        "gauge",
        "Verifier bond at the last check, ugpu.",
        g.bonded,
    );
    process_metrics(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn metrics_are_served_over_plain_http() {
        let shared = Shared::default();
        if let Ok(mut g) = shared.lock() {
            g.counters.assignments = 3;
            g.counters.verdicts_faulty = 2;
        }
        let addr = serve("127.0.0.1:0".parse().unwrap(), shared).await.unwrap();
        let text = metrics::scrape(addr).await.unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
        assert!(text.contains("gpuchain_verifier_assignments_total 3"));
        assert!(text.contains("gpuchain_verifier_verdicts_total{verdict=\"faulty\"} 2"));
        assert!(text.contains("process_resident_memory_bytes"));
    }
}
