//! End-to-end load: starts a localnet (real CometBFT + gpuchaind on 127.0.0.1), funds
//! sender accounts at genesis, submits signed transactions at a target rate over loopback
//! RPC for a bounded time, and reports sustained committed tx/s with p50/p99 latency from
//! submission to the block that committed it, and the nodes' memory (RSS of every
//! `gpuchaind` and `cometbft` process) and disk (the localnet directory) at the start, every
//! 30 s, and at the end.
//!
//! `loadgen <validators> <seconds> <rate/s> [senders] [market %] [proof heights] [retention]
//! [retain blocks] [snapshot interval] [join] [replay minutes]` — the nodes keep Merkle
//! proofs for the last `proof heights` heights (default 1,000; 0 keeps all), closed orders
//! are retired `retention` seconds of block time after they close (default: the chain's
//! 86,400), CometBFT keeps `retain blocks` blocks (default all) and the apps write a
//! state-sync snapshot every
//! `snapshot interval` heights (default 1,000), so a run longer than those windows shows
//! whether resources level off. With `join` = 1 the last validator keeps every block (an
//! archive node) and, once the load has stopped, two new nodes join the running chain: one
//! by state sync from the newest snapshot, then one by replaying every block from genesis;
//! the time each takes to reach the head is reported (the replay is given up after `replay
//! minutes`, default 40, with the heights it reached each minute). Every 60 s
//! a sample (RSS, disk, app state on disk, CPU seconds of the apps and of CometBFT, node
//! 0's live state keys and bytes, open orders, mempool size and running totals of its
//! FinalizeBlock, Commit and CheckTx work from its metrics) is printed to stderr as it is
//! taken. With a market share,
//! that percentage of the senders post 1-replica orders (escrow locked, bid window 3
//! blocks, no bids: expired and refunded by the chain) instead of transfers.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gpuchain_auction::{AuctionMsg, ClassRequirement, MsgPostOrder, Requirements, TooFewBids};
use gpuchain_bank::{BankMsg, MsgSend};
use gpuchain_client::keys::Keystore;
use gpuchain_jobspec::{BlobRef, InferenceSpec, JobSpec, ModelArch};
use gpuchain_loadgen::cpu;
use gpuchain_tests::TestNet;
use gpuchain_tx::build_signed_tx;
use gpuchain_tx::Msg;
use gpuchain_types::Address;
use sha2::{Digest, Sha256};
use tendermint_rpc::Client;

type Submitted = Arc<Mutex<BTreeMap<[u8; 32], Instant>>>;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let validators = args.first().copied().unwrap_or(1) as usize;
    let seconds = args.get(1).copied().unwrap_or(30);
    let rate = args.get(2).copied().unwrap_or(2_000).max(1);
    let senders = args.get(3).copied().unwrap_or(100).max(1);
    let market_pct = args.get(4).copied().unwrap_or(0).min(100);
    let proof_heights = args.get(5).copied().unwrap_or(1_000);
    let retention = args.get(6).copied();
    let retain_blocks = args.get(7).copied().unwrap_or(0);
    let snapshot_interval = args.get(8).copied().unwrap_or(1_000);
    let join = args.get(9).copied().unwrap_or(0) == 1 && validators >= 2;
    let replay_limit = Duration::from_secs(60 * args.get(10).copied().unwrap_or(40));

    let names: Vec<String> = (0..senders).map(|i| format!("load{i}")).collect();
    let accounts: Vec<(&str, u128)> = names.iter().map(|n| (n.as_str(), 10_000_000_000)).collect();
    let mut net = TestNet::build_with(validators, &accounts, |spec| {
        spec.proof_heights = proof_heights;
        spec.min_retain_blocks = retain_blocks;
        spec.snapshot_interval = snapshot_interval;
        if join {
            spec.extra_nodes = 2;
        }
        // As an RPC node serving agents would run: results found by hash, no event search.
        spec.index_events = Some(Vec::new());
        if let Some(secs) = retention {
            spec.genesis.auction.params.retention_secs = secs;
        }
    })?;
    let archive = validators - 1;
    if join {
        let path = net.net.nodes[archive].app_home.join("app.toml");
        let text = std::fs::read_to_string(&path)?.replace(
            &format!("min_retain_blocks = {retain_blocks}"),
            "min_retain_blocks = 0",
        );
        std::fs::write(&path, text)?;
    }
    net.start_nodes(0..validators).await?;
    let keystore = Keystore::open(&net.net.keys_dir)?;
    let client = net.client(0)?;
    let chain_id = client.chain_id().await?;
    let params = client.tx_params().await?;
    let submitted: Submitted = Arc::default();
    let stop_at = Instant::now() + Duration::from_secs(seconds);
    let per_sender = Duration::from_secs_f64(senders as f64 / rate as f64);

    let mut tasks = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let key = keystore.signing_key(name, None)?;
        let node = net.client(i % validators)?;
        let (chain_id, params, submitted) = (chain_id.clone(), params.clone(), submitted.clone());
        tasks.push(tokio::spawn(async move {
            let mut tick = tokio::time::interval(per_sender);
            let mut nonce = 0u64;
            while Instant::now() < stop_at {
                tick.tick().await;
                let msgs = if (i as u64 % 100) < market_pct {
                    vec![Msg::Auction(AuctionMsg::PostOrder(expiring_order()))]
                } else {
                    vec![Msg::Bank(BankMsg::Send(MsgSend {
                        to: Address([7; 20]),
                        amount: 1,
                    }))]
                };
                let raw = build_signed_tx(&key, &chain_id, nonce, &params, msgs, "").encode();
                let hash: [u8; 32] = Sha256::digest(&raw).into();
                let sent = Instant::now();
                if let Ok(r) = node.rpc().broadcast_tx_sync(raw).await {
                    if r.code.is_ok() {
                        submitted.lock().unwrap().insert(hash, sent);
                        nonce += 1;
                    }
                }
            }
        }));
    }

    // Resource samples every 60 s while the load runs.
    let dir = net.dir().to_path_buf();
    let app_homes: Vec<_> = net.net.nodes.iter().map(|n| n.app_home.clone()).collect();
    let sample = |at_secs| {
        let mut s = resources(&dir, &app_homes, at_secs);
        if let Ok(text) = net.scrape_metrics(0) {
            for (field, name) in [
                ("live_state_keys", "gpuchain_node_state_keys"),
                ("live_state_bytes", "gpuchain_node_state_bytes"),
                ("open_orders", "gpuchain_node_open_orders"),
                ("height", "gpuchain_node_height"),
            ] {
                s[field] = TestNet::metric_value(&text, name).into();
            }
            // Where node 0's time goes, as running totals: per-minute differences show
            // whether executing, committing or re-checking the mempool grows.
            for (field, name) in [
                (
                    "finalize_seconds_total",
                    "gpuchain_node_finalize_block_seconds_total",
                ),
                ("commit_seconds_total", "gpuchain_node_commit_seconds_total"),
                (
                    "checktx_accepted_total",
                    "gpuchain_node_checktx_total{result=\"accepted\"}",
                ),
                ("txs_ok_total", "gpuchain_node_txs_total{outcome=\"ok\"}"),
            ] {
                s[field] = TestNet::metric_f64(&text, name).into();
            }
        }
        if let Some(n) = mempool_size(&net.net.nodes[0].rpc_url) {
            s["mempool_txs"] = n.into();
        }
        eprintln!("sample {s}");
        s
    };
    let mut samples = vec![sample(0)];
    let mut next_sample = Instant::now() + Duration::from_secs(60);
    // Watch blocks: the time a block is first seen is the commit time of its transactions.
    let mut latencies = Vec::new();
    let mut committed_at = Vec::new();
    let mut next = client.latest_height().await? + 1;
    let drain_until = stop_at + Duration::from_secs(5);
    while Instant::now() < drain_until {
        let latest = client.latest_height().await?;
        while next <= latest {
            let block = client
                .rpc()
                .block(tendermint::block::Height::try_from(next)?)
                .await?;
            let seen = Instant::now();
            for tx in block.block.data.iter() {
                let hash: [u8; 32] = Sha256::digest(tx).into();
                if let Some(sent) = submitted.lock().unwrap().remove(&hash) {
                    latencies.push(seen.duration_since(sent).as_secs_f64());
                    committed_at.push(seen);
                }
            }
            next += 1;
        }
        if Instant::now() >= next_sample {
            samples.push(sample(
                Instant::now()
                    .duration_since(stop_at - Duration::from_secs(seconds))
                    .as_secs(),
            ));
            next_sample += Duration::from_secs(60);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    samples.push(sample(seconds + 5));
    for t in tasks {
        t.abort();
    }
    let joins = if join {
        join_by_state_sync_then_replay(&mut net, archive, replay_limit).await?
    } else {
        serde_json::Value::Null
    };
    latencies.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * p) as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let window = seconds as f64;
    let committed_in_window = committed_at.iter().filter(|t| **t <= stop_at).count();
    println!(
        "{}",
        serde_json::json!({
            "validators": validators,
            "seconds": seconds,
            "offered_rate_per_sec": rate,
            "senders": senders,
            "committed": latencies.len(),
            "committed_tx_per_sec": (committed_in_window as f64 / window).round(),
            "latency_p50_ms": (pct(0.50) * 1000.0).round(),
            "latency_p99_ms": (pct(0.99) * 1000.0).round(),
            "uncommitted_at_end": submitted.lock().unwrap().len(),
            "market_percent": market_pct,
            "resources": samples,
            "joins": joins,
        })
    );
    Ok(())
}

/// Two new nodes join the running chain one after the other, and each is timed from its
/// start until it has reached the head it was started at: the first by state sync (trusting
/// a header it verifies from the archive node, as an operator would take it from a block
/// explorer or a friend's node), the second by replaying every block from genesis, served
/// by the archive node since the others have deleted their old blocks.
async fn join_by_state_sync_then_replay(
    net: &mut TestNet,
    archive: usize,
    replay_limit: Duration,
) -> anyhow::Result<serde_json::Value> {
    let validators = archive + 1;
    let snapshot_height = std::fs::read_dir(net.net.nodes[0].app_home.join("snapshots"))?
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u64>().ok())
        .max()
        .ok_or_else(|| anyhow::anyhow!("node 0 has no complete snapshot to offer"))?;
    let light_dir = tempfile::tempdir()?;
    let mut light = gpuchain_client::LightClient::open(light_dir.path().join("light.json"))?;
    let trusted = light.verify(&net.client(archive)?, snapshot_height).await?;

    let synced = validators;
    let config = net.net.nodes[synced]
        .comet_home
        .join("config")
        .join("config.toml");
    let mut text = std::fs::read_to_string(&config)?;
    text.push_str(&format!(
        "\n[statesync]\nenable = true\nrpc_servers = \"{},{}\"\ntrust_height = {snapshot_height}\n\
         trust_hash = \"{}\"\ntrust_period = \"168h0m0s\"\ndiscovery_time = \"5s\"\n",
        net.net.nodes[archive].rpc_url,
        net.net.nodes[0].rpc_url,
        trusted.header.hash()
    ));
    std::fs::write(&config, text)?;
    let state_sync = time_to_head(net, synced, Duration::from_secs(600)).await?;
    let restored_from = net
        .client(synced)?
        .status()
        .await?
        .sync_info
        .earliest_block_height
        .value();

    let replayed = validators + 1;
    let replay = time_to_head(net, replayed, replay_limit).await?;
    // At the head: the node that replayed has caught up with it by now (it follows blocks
    // within a few of the head), and the nodes that prune have not deleted it. A replay
    // given up before the head is left out, so the state-synced node is still compared.
    let replay_reached_head = replay.get("seconds").is_some();
    let mut compared = vec![archive, synced];
    if replay_reached_head {
        compared.push(replayed);
    }
    let at = net.client(archive)?.latest_height().await?;
    let app_hash = match net.assert_same_app_hash(&compared, at).await {
        Ok(hash) => serde_json::json!({ "after_height": at, "hash": hash, "nodes": compared }),
        Err(e) => {
            let error = format!("{e:#}");
            let error: Vec<&str> = error.lines().take(4).collect();
            serde_json::json!({ "after_height": at, "nodes": compared, "error": error.join(" ") })
        }
    };
    Ok(serde_json::json!({
        "snapshot_height": snapshot_height,
        "state_sync": state_sync,
        "state_synced_first_block": restored_from,
        "replay_from_genesis": replay,
        "same_app_hash": app_hash,
    }))
}

/// Starts node `i` and waits (up to `limit`) until it has reached the height node 0 had
/// when it started, reporting the seconds that took, or how far it got per minute.
async fn time_to_head(
    net: &mut TestNet,
    i: usize,
    limit: Duration,
) -> anyhow::Result<serde_json::Value> {
    let head = net.client(0)?.latest_height().await?;
    let started = Instant::now();
    net.start_app(i, &[])?;
    net.start_comet(i)?;
    let client = net.client(i)?;
    let mut progress = Vec::new();
    let mut next_report = started + Duration::from_secs(60);
    loop {
        let height = client.latest_height().await.unwrap_or(0);
        if height >= head {
            let secs = started.elapsed().as_secs_f64();
            eprintln!("node {i} reached height {head} after {secs:.1} s");
            return Ok(serde_json::json!({
                "head": head,
                "seconds": (secs * 10.0).round() / 10.0,
                "heights_each_minute": progress,
            }));
        }
        if Instant::now() >= next_report {
            eprintln!("node {i} at height {height} of {head}");
            progress.push(height);
            next_report += Duration::from_secs(60);
        }
        if started.elapsed() > limit {
            return Ok(serde_json::json!({
                "head": head,
                "reached": height,
                "gave_up_after_seconds": limit.as_secs(),
                "heights_each_minute": progress,
            }));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A 1-replica order nobody will bid on in time: escrow is locked, then refunded at expiry.
fn expiring_order() -> MsgPostOrder {
    let blob = BlobRef {
        blake3: [9; 32],
        size: 1_000,
        urls: vec!["http://127.0.0.1:9/blob/x".into()],
    };
    MsgPostOrder {
        job: JobSpec::Inference(InferenceSpec {
            arch: ModelArch::DigitsMlp,
            weights: blob.clone(),
            tokenizer: None,
            input: blob,
            batch_size: 64,
            llama: None,
            generation: None,
            tolerance: None,
        }),
        requirements: Requirements {
            class: ClassRequirement::Gpu,
            gpu_model: None,
            min_vram_mib: 0,
            min_gpu_count: 0,
            min_cuda_version: 0,
            region: None,
        },
        replicas: 1,
        max_price_per_replica: 1_000,
        bid_window_blocks: 3,
        exec_deadline_blocks: 10,
        on_too_few_bids: TooFewBids::Refund,
    }
}

/// RSS (KiB) of every process whose command line names `dir`, and the bytes under `dir`.
/// RSS of the localnet's processes, and disk: the whole localnet and the apps' state alone.
fn resources(dir: &Path, app_homes: &[std::path::PathBuf], at_secs: u64) -> serde_json::Value {
    let needle = dir.to_string_lossy().to_string();
    let mut rss_kib = 0u64;
    let mut processes = 0u32;
    // CPU seconds used so far by the apps and by CometBFT: which side a slowdown is on.
    let (mut app_ticks, mut comet_ticks) = (0u64, 0u64);
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let path = entry.path();
        let cmdline = std::fs::read(path.join("cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains(&needle) {
            continue;
        }
        let status = std::fs::read_to_string(path.join("status")).unwrap_or_default();
        if let Some(kib) = status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
        {
            rss_kib += kib;
            processes += 1;
        }
        let ticks = cpu::process_ticks(&path.join("stat"));
        if String::from_utf8_lossy(&cmdline).contains("cometbft") {
            comet_ticks += ticks;
        } else {
            app_ticks += ticks;
        }
    }
    serde_json::json!({
        "at_secs": at_secs,
        "processes": processes,
        "rss_mib": rss_kib / 1024,
        "disk_mib": disk_bytes(dir) / (1 << 20),
        "app_state_mib": app_homes.iter().map(|h| disk_bytes(h)).sum::<u64>() / (1 << 20),
        "app_cpu_secs": app_ticks / cpu::CLOCK_TICKS_PER_SEC,
        "cometbft_cpu_secs": comet_ticks / cpu::CLOCK_TICKS_PER_SEC,
    })
}

fn disk_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => disk_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Transactions waiting in a node's mempool (`num_unconfirmed_txs`), read with a plain
/// HTTP request so that the sample never waits on the async client.
fn mempool_size(rpc_url: &str) -> Option<u64> {
    use std::io::{Read, Write};
    let addr = rpc_url.strip_prefix("http://")?;
    let mut sock = std::net::TcpStream::connect(addr).ok()?;
    sock.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    sock.write_all(b"GET /num_unconfirmed_txs HTTP/1.0\r\nHost: x\r\n\r\n")
        .ok()?;
    let mut text = String::new();
    sock.read_to_string(&mut text).ok()?;
    let body = text.split_once("\r\n\r\n")?.1;
    let json: serde_json::Value = serde_json::from_str(body).ok()?;
    json["result"]["total"].as_str()?.parse().ok()
}
