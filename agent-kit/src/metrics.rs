//! What every agent's Prometheus endpoint shares: a hand-written `GET /metrics` server on a
//! tokio listener (text format 0.0.4), the exposition text builder, the text an agent
//! publishes as its state changes, and the process's own CPU seconds and resident memory
//! read from /proc.

use std::fmt::{Display, Write as _};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Exposition text under construction, every metric named `<prefix>_<name>`.
#[derive(Clone, Debug)]
pub struct Exposition {
    prefix: &'static str,
    text: String,
}

impl Exposition {
    /// No metrics yet; their names will start with `<prefix>_`.
    pub fn new(prefix: &'static str) -> Exposition {
        Exposition {
            prefix,
            text: String::new(),
        }
    }

    /// Appends a counter with its HELP and TYPE lines.
    pub fn counter(&mut self, name: &str, help: &str, value: impl Display) {
        let name = format!("{}_{name}", self.prefix);
        metric(&mut self.text, &name, "counter", help, value);
    }

    /// Appends a gauge with its HELP and TYPE lines.
    pub fn gauge(&mut self, name: &str, help: &str, value: impl Display) {
        let name = format!("{}_{name}", self.prefix);
        metric(&mut self.text, &name, "gauge", help, value);
    }

    /// Appends a metric of `kind` with its HELP and TYPE lines (written even when there are
    /// no samples), then one sample per `(value of label, value)`.
    pub fn labelled<L: Display, V: Display>(
        &mut self,
        name: &str,
        kind: &str,
        help: &str,
        label: &str,
        samples: impl IntoIterator<Item = (L, V)>,
    ) {
        let name = format!("{}_{name}", self.prefix);
        let _ = writeln!(self.text, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (at, value) in samples {
            let _ = writeln!(self.text, "{name}{{{label}=\"{at}\"}} {value}");
        }
    }

    /// The text.
    pub fn into_text(self) -> String {
        self.text
    }
}

/// The metrics an agent last published, which its `/metrics` endpoint serves: the agent
/// replaces them whenever its state changes.
#[derive(Clone, Debug, Default)]
pub struct Published(Arc<Mutex<String>>);

impl Published {
    /// Published `metrics` (what is served until the agent publishes again).
    pub fn new(metrics: Exposition) -> Published {
        Published(Arc::new(Mutex::new(metrics.into_text())))
    }

    /// Replaces what is served.
    pub fn publish(&self, metrics: Exposition) {
        if let Ok(mut text) = self.0.lock() {
            *text = metrics.into_text();
        }
    }

    /// Binds `addr` and serves, until the runtime stops, what was last published, then
    /// `at_scrape()` and the process's own metrics, both read at each scrape; returns the
    /// bound address.
    pub async fn serve(
        &self,
        addr: SocketAddr,
        at_scrape: fn() -> String,
    ) -> std::io::Result<SocketAddr> {
        let published = Arc::clone(&self.0);
        let render: Render = Arc::new(move || {
            let mut out = published.lock().map(|t| t.clone()).unwrap_or_default();
            out.push_str(&at_scrape());
            process_metrics(&mut out);
            out
        });
        serve(addr, render).await
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn what_was_published_is_served_over_plain_http_with_the_process_metrics() {
        let mut metrics = Exposition::new("agent");
        metrics.counter("jobs_total", "Jobs.", 3);
        let published = Published::new(metrics);
        let gpus = || "gpu_busy 1\n".to_string();
        let addr = published
            .serve("127.0.0.1:0".parse().unwrap(), gpus)
            .await
            .unwrap();
        let mut metrics = Exposition::new("agent");
        metrics.gauge("height", "Last block.", 7);
        let samples = [("honest", 1), ("faulty", 2)];
        metrics.labelled("verdicts_total", "counter", "Verdicts.", "verdict", samples);
        published.publish(metrics);
        let text = scrape(addr).await.unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
        let body = text.split_once("\r\n\r\n").unwrap().1;
        let expected = "# HELP agent_height Last block.\n# TYPE agent_height gauge\nagent_height 7\n\
            # HELP agent_verdicts_total Verdicts.\n# TYPE agent_verdicts_total counter\n\
            agent_verdicts_total{verdict=\"honest\"} 1\nagent_verdicts_total{verdict=\"faulty\"} 2\n\
            gpu_busy 1\n";
        assert!(body.starts_with(expected), "{body}");
        assert!(body.contains("process_resident_memory_bytes"), "{body}");
    }
}
