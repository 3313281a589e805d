//! One replay: connections send the file's transactions on schedule while a watcher reads
//! every new block from the first node and matches its transactions by hash.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::cpu;
use crate::http::{broadcast_request, get_request, Connection};
use crate::txfile::Tx;

/// What to replay against which nodes.
#[derive(Clone, Debug)]
pub struct Plan {
    /// RPC addresses (`host:port`); connection `c` sends to node `c % nodes.len()`, and
    /// blocks are read from the first.
    pub nodes: Vec<String>,
    /// Offered transactions per second; `None` sends as fast as the connections allow
    /// (each sends its next transaction when the node has answered the last).
    pub rate: Option<u64>,
    /// Length of the measured window.
    pub seconds: u64,
    /// Concurrent connections (HTTP keep-alive).
    pub connections: usize,
    /// How long blocks are still read after the window, for latencies of late commits.
    pub drain_seconds: u64,
    /// Processes whose CPU is reported, by label (several may share one).
    pub processes: Vec<(String, u32)>,
}

/// What one replay measured.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Offered tx/s, or `None` at the ceiling.
    pub offered_per_sec: Option<u64>,
    /// Length of the window.
    pub seconds: u64,
    /// Connections used.
    pub connections: usize,
    /// Transactions sent within the window.
    pub sent: u64,
    /// Of those, accepted into a mempool (`code` 0).
    pub accepted: u64,
    /// Refused by CheckTx or the RPC (a full mempool), with the first reason given.
    pub refused: u64,
    /// The first refusal's reason.
    pub first_refusal: Option<String>,
    /// Sends that failed at the connection.
    pub transport_errors: u64,
    /// Accepted transactions in blocks that appeared within the window, per second.
    pub committed_per_sec: f64,
    /// Accepted transactions committed by the end of the drain.
    pub committed: u64,
    /// Accepted transactions still uncommitted at the end of the drain.
    pub uncommitted: u64,
    /// Latency from the scheduled send time (at the ceiling: the actual send) to the moment
    /// the watcher first saw the committing block, in milliseconds.
    pub latency_ms: Percentiles,
    /// Blocks that appeared within the window.
    pub blocks: u64,
    /// Cores each labelled group of processes used over the window.
    pub cpu_cores: BTreeMap<String, f64>,
    /// Cores the whole machine used over the window (of `machine_cores`).
    pub machine_busy_cores: f64,
    /// Cores used by anything but the measured processes and the load generator: work
    /// beside the run, which makes its figures unreliable when it is more than a few
    /// hundredths.
    pub other_cores: f64,
    /// Cores the machine has.
    pub machine_cores: usize,
    /// 1-minute load average just before the window.
    pub load_before: f64,
    /// The file ran out before the window ended (the figures then undercount).
    pub file_exhausted: bool,
}

/// Latency percentiles in milliseconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Slowest.
    pub max: f64,
}

/// A transaction ready to send: its place in the schedule, its hash and its HTTP request.
#[derive(Clone)]
struct Queued {
    index: usize,
    hash: [u8; 32],
    request: Vec<u8>,
}

/// Each accepted transaction's reference time (scheduled or sent), by hash.
type Pending = Arc<Mutex<BTreeMap<[u8; 32], Instant>>>;

#[derive(Default)]
struct Counts {
    sent: u64,
    accepted: u64,
    refused: u64,
    first_refusal: Option<String>,
    transport_errors: u64,
    exhausted: bool,
}

/// Replays `txs` as `plan` says and reports what was committed.
pub async fn run(txs: Vec<Tx>, plan: &Plan) -> Result<Report> {
    anyhow::ensure!(!plan.nodes.is_empty(), "no node to send to");
    let connections = plan.connections.max(1);
    let mut queues: Vec<Vec<Queued>> = vec![Vec::new(); connections];
    for (index, tx) in txs.into_iter().enumerate() {
        let c = tx.lane as usize % connections;
        let node = &plan.nodes[c % plan.nodes.len()];
        let hash: [u8; 32] = Sha256::digest(&tx.bytes).into();
        queues[c].push(Queued {
            index,
            hash,
            request: broadcast_request(node, &tx.bytes),
        });
    }

    let watch = plan.nodes[0].clone();
    let mut blocks = Connection::new(&watch);
    let first_height = latest_height(&mut blocks, &watch).await? + 1;

    let pending: Pending = Arc::default();
    let counts = Arc::new(Mutex::new(Counts::default()));
    let load_before = cpu::load_average();
    let start = Instant::now() + Duration::from_millis(200);
    let end = start + Duration::from_secs(plan.seconds);
    let active = Arc::new(AtomicUsize::new(connections));
    let mut senders = Vec::new();
    for (c, queue) in queues.into_iter().enumerate() {
        let node = plan.nodes[c % plan.nodes.len()].clone();
        let (pending, counts, rate) = (pending.clone(), counts.clone(), plan.rate);
        let active = active.clone();
        senders.push(tokio::spawn(async move {
            send_queue(queue, &node, rate, start, end, &pending, &counts).await;
            active.fetch_sub(1, Ordering::SeqCst);
        }));
    }

    tokio::time::sleep_until(start.into()).await;
    // The load generator's own CPU is reported beside the processes it measures.
    let mut processes = plan.processes.clone();
    processes.push(("loadgen".to_string(), std::process::id()));
    let cpu_start = (Instant::now(), sample_cpu(&processes), cpu::machine_ticks());
    let mut seen = Seen::default();
    let mut height = first_height;
    let mut cpu_end = None;
    let drain = Duration::from_secs(plan.drain_seconds);
    let drain_end = end + drain;
    loop {
        let now = Instant::now();
        // The window closes at its end, or earlier when every connection has sent all it
        // had (a file replayed whole, as when ageing a chain).
        let all_sent = active.load(Ordering::SeqCst) == 0;
        if cpu_end.is_none() && (now >= end || all_sent) {
            cpu_end = Some((now, sample_cpu(&processes), cpu::machine_ticks()));
        }
        let nothing_pending = pending.lock().map(|p| p.is_empty()).unwrap_or(true);
        // Blocks are read for `drain_seconds` after the window closed, however it closed.
        let drained = cpu_end
            .as_ref()
            .is_some_and(|(closed, _, _)| now >= *closed + drain);
        if now >= drain_end || drained || (cpu_end.is_some() && nothing_pending) {
            break;
        }
        // A block not there yet, or a reply lost under load, is asked for again.
        match block_txs(&mut blocks, &watch, height).await {
            Ok(Some(txs)) => {
                seen.block(now, start, end, txs, &pending);
                height += 1;
            }
            Ok(None) | Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    for s in senders {
        s.await.context("a sending task failed")?;
    }
    let cpu_end =
        cpu_end.unwrap_or_else(|| (Instant::now(), sample_cpu(&processes), cpu::machine_ticks()));
    let cpu = cpu_usage(&cpu_start, &cpu_end);
    let counts = counts
        .lock()
        .map_err(|_| anyhow::anyhow!("a sender panicked"))?;
    // A file that ran out: everything it held, over the time it took to commit.
    let (window, committed_in_window) = match (counts.exhausted, seen.last_commit) {
        (true, Some(last)) => (
            last.saturating_duration_since(start)
                .as_secs_f64()
                .max(0.001),
            seen.latencies.len() as u64,
        ),
        _ => (plan.seconds.max(1) as f64, seen.in_window),
    };
    let uncommitted = pending.lock().map(|p| p.len() as u64).unwrap_or(0);
    Ok(Report {
        offered_per_sec: plan.rate,
        seconds: plan.seconds,
        connections,
        sent: counts.sent,
        accepted: counts.accepted,
        refused: counts.refused,
        first_refusal: counts.first_refusal.clone(),
        transport_errors: counts.transport_errors,
        committed_per_sec: round1(committed_in_window as f64 / window),
        committed: seen.latencies.len() as u64,
        uncommitted,
        latency_ms: seen.percentiles(),
        blocks: seen.blocks_in_window,
        cpu_cores: cpu.cores,
        machine_busy_cores: cpu.machine_busy,
        other_cores: cpu.other,
        machine_cores: cpu.machine_cores,
        load_before,
        file_exhausted: counts.exhausted,
    })
}

/// One connection's share: its transactions in order, each at its scheduled time (or at
/// once at the ceiling), until the window closes.
async fn send_queue(
    queue: Vec<Queued>,
    node: &str,
    rate: Option<u64>,
    start: Instant,
    end: Instant,
    pending: &Pending,
    counts: &Mutex<Counts>,
) {
    let mut conn = Connection::new(node);
    let mut finished = false;
    for Queued {
        index,
        hash,
        request,
    } in &queue
    {
        let reference = match rate {
            Some(rate) => {
                let at = start + Duration::from_secs_f64(*index as f64 / rate.max(1) as f64);
                if at >= end {
                    finished = true;
                    break;
                }
                tokio::time::sleep_until(at.into()).await;
                at
            }
            None => {
                tokio::time::sleep_until(start.into()).await;
                let now = Instant::now();
                if now >= end {
                    finished = true;
                    break;
                }
                now
            }
        };
        let outcome = conn.send(request).await;
        let Ok(mut counts) = counts.lock() else {
            return;
        };
        counts.sent += 1;
        match outcome.map(|body| broadcast_outcome(&body)) {
            Ok(Ok(())) => {
                counts.accepted += 1;
                if let Ok(mut p) = pending.lock() {
                    p.insert(*hash, reference);
                }
            }
            Ok(Err(reason)) => {
                counts.refused += 1;
                counts.first_refusal.get_or_insert(reason);
            }
            Err(_) => counts.transport_errors += 1,
        }
    }
    if !finished && !queue.is_empty() {
        if let Ok(mut counts) = counts.lock() {
            counts.exhausted = true;
        }
    }
}

#[derive(Deserialize)]
struct RpcReply<T> {
    result: Option<T>,
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct BroadcastResult {
    code: u32,
    #[serde(default)]
    log: String,
}

/// `Ok` when the node accepted the transaction into its mempool, else the reason.
fn broadcast_outcome(body: &[u8]) -> Result<(), String> {
    match serde_json::from_slice::<RpcReply<BroadcastResult>>(body) {
        Ok(RpcReply {
            result: Some(r), ..
        }) if r.code == 0 => Ok(()),
        Ok(RpcReply {
            result: Some(r), ..
        }) => Err(format!("code {}: {}", r.code, r.log)),
        Ok(RpcReply { error: Some(e), .. }) => Err(e.to_string()),
        _ => Err(String::from_utf8_lossy(body).chars().take(200).collect()),
    }
}

async fn latest_height(conn: &mut Connection, host: &str) -> Result<u64> {
    #[derive(Deserialize)]
    struct Status {
        sync_info: SyncInfo,
    }
    #[derive(Deserialize)]
    struct SyncInfo {
        latest_block_height: String,
    }
    let body = conn.send(&get_request(host, "/status")).await?;
    let reply: RpcReply<Status> = serde_json::from_slice(&body).context("reading /status")?;
    let status = reply
        .result
        .ok_or_else(|| anyhow::anyhow!("{host} answered /status with {:?}", reply.error))?;
    Ok(status.sync_info.latest_block_height.parse()?)
}

/// The transactions of block `height`, or `None` while it does not exist yet.
async fn block_txs(conn: &mut Connection, host: &str, height: u64) -> Result<Option<Vec<Vec<u8>>>> {
    #[derive(Deserialize)]
    struct BlockResult {
        block: Block,
    }
    #[derive(Deserialize)]
    struct Block {
        data: Data,
    }
    #[derive(Deserialize)]
    struct Data {
        #[serde(default)]
        txs: Option<Vec<String>>,
    }
    let body = conn
        .send(&get_request(host, &format!("/block?height={height}")))
        .await?;
    let reply: RpcReply<BlockResult> =
        serde_json::from_slice(&body).with_context(|| format!("reading block {height}"))?;
    let Some(result) = reply.result else {
        return Ok(None);
    };
    let engine = base64::engine::general_purpose::STANDARD;
    result
        .block
        .data
        .txs
        .unwrap_or_default()
        .iter()
        .map(|t| engine.decode(t).context("a transaction that is not base64"))
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// What the watcher has seen of committed blocks.
#[derive(Default)]
struct Seen {
    latencies: Vec<f64>,
    in_window: u64,
    blocks_in_window: u64,
    last_commit: Option<Instant>,
}

impl Seen {
    fn block(
        &mut self,
        now: Instant,
        start: Instant,
        end: Instant,
        txs: Vec<Vec<u8>>,
        pending: &Pending,
    ) {
        let in_window = now >= start && now <= end;
        if in_window {
            self.blocks_in_window += 1;
        }
        let Ok(mut pending) = pending.lock() else {
            return;
        };
        for tx in txs {
            let hash: [u8; 32] = Sha256::digest(&tx).into();
            if let Some(reference) = pending.remove(&hash) {
                self.latencies
                    .push(now.saturating_duration_since(reference).as_secs_f64() * 1000.0);
                self.last_commit = Some(now);
                if in_window {
                    self.in_window += 1;
                }
            }
        }
    }

    fn percentiles(&mut self) -> Percentiles {
        if self.latencies.is_empty() {
            return Percentiles::default();
        }
        self.latencies.sort_by(f64::total_cmp);
        let at = |p: f64| {
            let i = ((self.latencies.len() - 1) as f64 * p).round() as usize;
            round1(self.latencies[i.min(self.latencies.len() - 1)])
        };
        Percentiles {
            p50: at(0.50),
            p90: at(0.90),
            p99: at(0.99),
            max: at(1.0),
        }
    }
}

/// A CPU sample: when, each process's ticks, the machine's busy and total ticks.
type CpuSample = (Instant, Vec<(String, u64)>, (u64, u64));

struct CpuUsage {
    cores: BTreeMap<String, f64>,
    machine_busy: f64,
    other: f64,
    machine_cores: usize,
}

/// Cores used between two samples, per label and by the machine.
fn cpu_usage(start: &CpuSample, end: &CpuSample) -> CpuUsage {
    let seconds = end
        .0
        .saturating_duration_since(start.0)
        .as_secs_f64()
        .max(0.001);
    let mut cores = BTreeMap::new();
    for ((label, before), (_, after)) in start.1.iter().zip(end.1.iter()) {
        *cores.entry(label.clone()).or_insert(0.0) +=
            after.saturating_sub(*before) as f64 / cpu::CLOCK_TICKS_PER_SEC as f64 / seconds;
    }
    let machine_cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let busy = end.2 .0.saturating_sub(start.2 .0) as f64;
    let total = end.2 .1.saturating_sub(start.2 .1).max(1) as f64;
    let machine_busy = busy / total * machine_cores as f64;
    let measured: f64 = cores.values().sum();
    CpuUsage {
        cores: cores.into_iter().map(|(k, v)| (k, round2(v))).collect(),
        machine_busy: round2(machine_busy),
        other: round2((machine_busy - measured).max(0.0)),
        machine_cores,
    }
}

fn sample_cpu(processes: &[(String, u32)]) -> Vec<(String, u64)> {
    processes
        .iter()
        .map(|(label, pid)| (label.clone(), cpu::pid_ticks(*pid)))
        .collect()
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broadcast_reply_is_accepted_only_with_code_zero() {
        assert_eq!(
            broadcast_outcome(
                br#"{"jsonrpc":"2.0","id":0,"result":{"code":0,"log":"","hash":"AB"}}"#
            ),
            Ok(())
        );
        let refused = broadcast_outcome(
            br#"{"jsonrpc":"2.0","id":0,"result":{"code":4,"log":"wrong nonce","hash":"AB"}}"#,
        );
        assert_eq!(refused, Err("code 4: wrong nonce".into()));
        let full = broadcast_outcome(
            br#"{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"Internal error","data":"mempool is full"}}"#,
        )
        .unwrap_err();
        assert!(full.contains("mempool is full"), "{full}");
    }

    #[test]
    fn latency_percentiles_come_from_the_sorted_latencies() {
        let mut seen = Seen {
            latencies: (1..=100).rev().map(f64::from).collect(),
            ..Seen::default()
        };
        let p = seen.percentiles();
        assert_eq!((p.p50, p.p90, p.p99, p.max), (51.0, 90.0, 99.0, 100.0));
    }
}
