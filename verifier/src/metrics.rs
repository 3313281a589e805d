//! Prometheus metrics over plain HTTP (`GET /metrics`, text format 0.0.4), hand-written on a
//! tokio listener: assignments, verdicts by kind, fetch failures, training audits,
//! challenges, and the process's CPU seconds and resident memory.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

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
pub(crate) type Shared = Arc<Mutex<Gauges>>;

/// Binds `addr` and serves until the task is dropped; returns the bound address.
pub(crate) async fn serve(addr: SocketAddr, shared: Shared) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                continue;
            };
            let shared = shared.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&buf[..n]);
                let (status, body) = if request.starts_with("GET /metrics") {
                    let gauges = shared.lock().map(|g| g.clone()).unwrap_or_default();
                    ("200 OK", render(&gauges))
                } else {
                    ("404 Not Found", "try /metrics\n".to_string())
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(body.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    Ok(bound)
}

fn metric(out: &mut String, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
    );
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
    if let Some((cpu, rss)) = process_usage() {
        metric(
            &mut out,
            "process_cpu_seconds_total",
            "counter",
            "CPU time of the agent.",
            format!("{cpu:.2}"),
        );
        metric(
            &mut out,
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory of the agent.",
            rss,
        );
    }
    out
}

/// `(user+system CPU seconds, resident bytes)` of this process, from /proc.
pub(crate) fn process_usage() -> Option<(f64, u64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields after the name start at index 3 (state); utime is 14, stime 15 (1-based).
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let rss_kb: u64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((ticks / 100.0, rss_kb * 1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn metrics_are_served_over_plain_http() {
        let shared: Shared = Arc::default();
        if let Ok(mut g) = shared.lock() {
            g.counters.assignments = 3;
            g.counters.verdicts_faulty = 2;
        }
        let addr = serve("127.0.0.1:0".parse().unwrap(), shared).await.unwrap();
        let mut sock = tokio::net::TcpStream::connect(addr).await.unwrap();
        sock.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut text = String::new();
        sock.read_to_string(&mut text).await.unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
        assert!(text.contains("gpuchain_verifier_assignments_total 3"));
        assert!(text.contains("gpuchain_verifier_verdicts_total{verdict=\"faulty\"} 2"));
        assert!(text.contains("process_resident_memory_bytes"));
    }
}
