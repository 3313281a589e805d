//! Prometheus metrics over plain HTTP (`GET /metrics`, served by
//! `gpuchain_agent_kit::metrics`): the agent's counters and gauges as of its last save, GPU
//! utilisation from NVML at scrape time, and the process's CPU seconds and resident memory.

use gpuchain_agent_kit::metrics::Exposition;

use crate::state::State;

/// The start of every metric's name.
const PREFIX: &str = "gpuchain_provider";

/// The agent's counters and gauges: its `state`, the last block it processed and the
/// capacity slots configured.
pub(crate) fn render(state: &State, height: u64, capacity_slots: u32) -> Exposition {
    let c = &state.counters;
    let mut m = Exposition::new(PREFIX);
    m.counter("bids_total", "Bids placed on chain.", c.bids);
    m.counter(
        "bids_failed_total",
        "Bid transactions that failed.",
        c.bids_failed,
    );
    m.counter(
        "orders_skipped_total",
        "Orders not bid on (ineligible, priced out, bad blobs).",
        c.orders_skipped,
    );
    m.counter("wins_total", "Auctions won (leases).", c.wins);
    m.counter("losses_total", "Auctions lost.", c.losses);
    m.counter(
        "jobs_completed_total",
        "Jobs executed and committed.",
        c.jobs_completed,
    );
    m.counter(
        "jobs_failed_total",
        "Jobs that could not be run.",
        c.jobs_failed,
    );
    m.counter(
        "earnings_ugpu_total",
        "Payments received, ugpu.",
        c.earnings,
    );
    m.gauge("chain_height", "Last block processed.", height);
    let reserved = state.slots_used();
    m.gauge(
        "reserved_slots",
        "Capacity slots held by pending bids and running jobs.",
        reserved,
    );
    m.gauge(
        "capacity_slots",
        "Capacity slots configured.",
        capacity_slots,
    );
    let active = u32::try_from(state.active_leases().count()).unwrap_or(0);
    m.gauge("active_leases", "Leases not yet final.", active);
    m
}

/// GPU utilisation from NVML, read at each scrape.
pub(crate) fn gpu_utilisation() -> String {
    let report = gpuchain_compute::hardware::probe();
    let busy = report
        .gpus
        .iter()
        .filter_map(|gpu| Some((gpu.index, gpu.utilization_percent?)));
    let mut m = Exposition::new(PREFIX);
    let help = "GPU utilisation from NVML.";
    m.labelled("gpu_utilization_percent", "gauge", help, "gpu", busy);
    m.into_text()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_gauges_are_named_for_the_provider() {
        let mut state = State::default();
        state.counters.bids = 3;
        state.counters.earnings = 720_000;
        let text = render(&state, 12, 2).into_text();
        assert!(text.contains("gpuchain_provider_bids_total 3\n"), "{text}");
        assert!(text.contains("gpuchain_provider_earnings_ugpu_total 720000\n"));
        assert!(text.contains(
            "# HELP gpuchain_provider_capacity_slots Capacity slots configured.\n\
             # TYPE gpuchain_provider_capacity_slots gauge\n\
             gpuchain_provider_capacity_slots 2\n"
        ));
        let gpus = gpu_utilisation();
        assert!(gpus.starts_with("# HELP gpuchain_provider_gpu_utilization_percent "));
    }
}
