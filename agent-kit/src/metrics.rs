//! What both agents' Prometheus endpoints share: a hand-written `GET /metrics` server on a
//! tokio listener (text format 0.0.4), the exposition line writer, and the process's own
//! CPU seconds and resident memory read from /proc.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// An agent's gauges, shared between the agent and the server.
pub type Shared<G> = Arc<Mutex<G>>;

/// Binds `addr` and serves `render` of the agent's current gauges until the runtime stops;
/// returns the bound address.
pub async fn serve_gauges<G: Clone + Default + Send + 'static>(
    addr: SocketAddr,
    shared: Shared<G>,
    render: fn(&G) -> String,
) -> std::io::Result<SocketAddr> {
    let text: Render =
        Arc::new(move || render(&shared.lock().map(|g| g.clone()).unwrap_or_default()));
    serve(addr, text).await
}

/// One scrape of `GET /metrics` at `addr`: the whole HTTP response (for tests and probes).
pub async fn scrape(addr: SocketAddr) -> std::io::Result<String> {
    let mut sock = tokio::net::TcpStream::connect(addr).await?;
    sock.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .await?;
    let mut text = String::new();
    sock.read_to_string(&mut text).await?;
    Ok(text)
}

/// Renders the exposition text at scrape time.
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// Binds `addr` and serves `render()` at `GET /metrics` until the runtime stops; returns the
/// bound address (port 0 picks one).
pub async fn serve(addr: SocketAddr, render: Render) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                continue;
            };
            let render = render.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&buf[..n]);
                let (status, body) = if request.starts_with("GET /metrics") {
                    ("200 OK", render())
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

/// Appends one metric with its HELP and TYPE lines.
pub fn metric(out: &mut String, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
    );
}

/// Appends `process_cpu_seconds_total` and `process_resident_memory_bytes` (when /proc
/// answers).
pub fn process_metrics(out: &mut String) {
    if let Some((cpu_centis, rss)) = process_usage() {
        metric(
            out,
            "process_cpu_seconds_total",
            "counter",
            "CPU time of the agent.",
            format!("{}.{:02}", cpu_centis / 100, cpu_centis % 100),
        );
        metric(
            out,
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory of the agent.",
            rss,
        );
    }
}

/// `(user+system CPU time in hundredths of a second, resident bytes)` of this process, from
/// /proc (whose tick is 1/100 s on Linux).
pub fn process_usage() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields after the name start at index 3 (state); utime is 14, stime 15 (1-based).
    let ticks = fields
        .get(11)?
        .parse::<u64>()
        .ok()?
        .checked_add(fields.get(12)?.parse::<u64>().ok()?)?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let rss_kb: u64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((ticks, rss_kb.saturating_mul(1024)))
}
