//! Prometheus metrics over plain HTTP (`GET /metrics`, served by
//! `gpuchain_agent_kit::metrics`): the agent's counters and gauges, GPU utilisation from NVML at scrape
//! time, and the process's CPU seconds and resident memory.

use std::fmt::Write as _;
use std::net::SocketAddr;

use gpuchain_agent_kit::metrics::{self, metric, process_metrics};

use crate::state::Counters;

/// What the agent publishes.
#[derive(Clone, Debug, Default)]
pub(crate) struct Gauges {
    pub(crate) counters: Counters,
    pub(crate) height: u64,
    pub(crate) reserved_slots: u32,
    pub(crate) active_leases: u32,
    pub(crate) capacity_slots: u32,
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
        "gpuchain_provider_bids_total",
        "counter",
        "Bids placed on chain.",
        c.bids,
    );
    metric(
        &mut out,
        "gpuchain_provider_bids_failed_total",
        "counter",
        "Bid transactions that failed.",
        c.bids_failed,
    );
    metric(
        &mut out,
        "gpuchain_provider_orders_skipped_total",
        "counter",
        "Orders not bid on (ineligible, priced out, bad blobs).",
        c.orders_skipped,
    );
    metric(
        &mut out,
        "gpuchain_provider_wins_total",
        "counter",
        "Auctions won (leases).",
        c.wins,
    );
    metric(
        &mut out,
        "gpuchain_provider_losses_total",
        "counter",
        "Auctions lost.",
        c.losses,
    );
    metric(
        &mut out,
        "gpuchain_provider_jobs_completed_total",
        "counter",
        "Jobs executed and committed.",
        c.jobs_completed,
    );
    metric(
        &mut out,
        "gpuchain_provider_jobs_failed_total",
        "counter",
        "Jobs that could not be run.",
        c.jobs_failed,
    );
    metric(
        &mut out,
        "gpuchain_provider_earnings_ugpu_total",
        "counter",
        "Payments received, ugpu.",
        c.earnings,
    );
    metric(
        &mut out,
        "gpuchain_provider_chain_height",
        "gauge",
        "Last block processed.",
        g.height,
    );
    metric(
        &mut out,
        "gpuchain_provider_reserved_slots",
        "gauge",
        "Capacity slots held by pending bids and running jobs.",
        g.reserved_slots,
    );
    metric(
        &mut out,
        "gpuchain_provider_capacity_slots",
        "gauge",
        "Capacity slots configured.",
        g.capacity_slots,
    );
    metric(
        &mut out,
        "gpuchain_provider_active_leases",
        "gauge",
        "Leases not yet final.",
        g.active_leases,
    );
    let report = gpuchain_compute::hardware::probe();
    let _ = writeln!(out, "# HELP gpuchain_provider_gpu_utilization_percent GPU utilisation from NVML.\n# TYPE gpuchain_provider_gpu_utilization_percent gauge");
    for gpu in &report.gpus {
        if let Some(u) = gpu.utilization_percent {
            let _ = writeln!(
                out,
                "gpuchain_provider_gpu_utilization_percent{{gpu=\"{}\"}} {u}",
                gpu.index
            );
        }
    }
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
            g.counters.bids = 3;
            g.counters.earnings = 720_000;
        }
        let addr = serve("127.0.0.1:0".parse().unwrap(), shared).await.unwrap();
        let text = metrics::scrape(addr).await.unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
        assert!(text.contains("gpuchain_provider_bids_total 3"));
        assert!(text.contains("gpuchain_provider_earnings_ugpu_total 720000"));
        assert!(text.contains("process_resident_memory_bytes"));
    }
}
