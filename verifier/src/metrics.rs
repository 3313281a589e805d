//! Prometheus metrics over plain HTTP (`GET /metrics`, served by
//! `gpuchain_agent_kit::metrics`): assignments, verdicts by kind, fetch failures, training
//! audits, challenges, and the process's CPU seconds and resident memory.

use gpuchain_agent_kit::metrics::Exposition;

use crate::state::State;

/// The agent's counters and gauges: its `state`, the last block it processed, the
/// re-executions in flight and its bond at the last check.
pub(crate) fn render(state: &State, height: u64, checking: usize, bonded: u128) -> Exposition {
    let c = &state.counters;
    let mut m = Exposition::new("gpuchain_verifier");
    m.counter(
        "assignments_total",
        "Assignments taken (lease, round).",
        c.assignments,
    );
    let verdicts = [("honest", c.verdicts_honest), ("faulty", c.verdicts_faulty)];
    let help = "Verdicts posted on chain, by kind.";
    m.labelled("verdicts_total", "counter", help, "verdict", verdicts);
    m.counter(
        "verdicts_failed_total",
        "Assignments that got no verdict (could not check or post).",
        c.verdicts_failed,
    );
    m.counter(
        "fetch_failures_total",
        "Provider outputs that could not be fetched or did not match their hash.",
        c.fetch_failures,
    );
    m.counter(
        "training_audits_total",
        "Training segments audited.",
        c.training_audits,
    );
    m.counter(
        "challenges_committed_total",
        "Ringer challenges committed.",
        c.challenges_committed,
    );
    m.counter(
        "challenges_revealed_total",
        "Ringer challenges revealed.",
        c.challenges_revealed,
    );
    m.counter(
        "challenges_abandoned_total",
        "Ringer challenges given up.",
        c.challenges_abandoned,
    );
    m.counter(
        "challenge_leases_failed_total",
        "Ringer leases that returned a wrong answer.",
        c.challenge_leases_failed,
    );
    m.counter(
        "challenge_leases_passed_total",
        "Ringer leases that returned the expected answer.",
        c.challenge_leases_passed,
    );
    m.counter(
        "orders_seen_total",
        "Orders seen (the ringer rate's base).",
        c.orders_seen,
    );
    m.gauge("chain_height", "Last block processed.", height);
    let checking = u32::try_from(checking).unwrap_or(u32::MAX);
    m.gauge("checking", "Re-executions in flight.", checking);
    let open_ringers = u32::try_from(state.open_ringers()).unwrap_or(u32::MAX);
    m.gauge("open_ringers", "Ringers not yet revealed.", open_ringers);
    m.gauge(
        "bonded_ugpu",
        "Verifier bond at the last check, ugpu.",
        bonded,
    );
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Counters;

    #[test]
    fn verdicts_are_one_counter_told_apart_by_kind() {
        let counters = Counters {
            assignments: 3,
            verdicts_faulty: 2,
            ..Counters::default()
        };
        let state = State {
            counters,
            ..State::default()
        };
        let text = render(&state, 12, 1, 5).into_text();
        assert!(
            text.contains("gpuchain_verifier_assignments_total 3\n"),
            "{text}"
        );
        assert!(text.contains(
            "# TYPE gpuchain_verifier_verdicts_total counter\n\
             gpuchain_verifier_verdicts_total{verdict=\"honest\"} 0\n\
             gpuchain_verifier_verdicts_total{verdict=\"faulty\"} 2\n"
        ));
        assert!(text.contains("gpuchain_verifier_challenges_abandoned_total 0\n"));
        assert!(text.contains("gpuchain_verifier_bonded_ugpu 5\n"));
    }
}
