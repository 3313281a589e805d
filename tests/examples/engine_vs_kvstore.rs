//! gpuchain against CometBFT's own `kvstore` app, side by side: the same localnet (the
//! localnet builder's CometBFT config: 300 ms `timeout_commit`, a 50,000-transaction
//! mempool with recheck, the kv indexer), the same load generator, transactions of the same
//! size, the two sides alternating run by run so that a change in the machine's load hits
//! both. Each run starts a fresh chain, writes its transactions to a file (signed transfers
//! from `senders` accounts for gpuchain, `key=value` pairs for kvstore), replays the file
//! with `gpuchain-loadgen`'s engine and prints one JSON line; the end prints the medians per
//! side and their ratio.
//!
//! `engine_vs_kvstore [--validators 1,4] [--rates 1000,2000,ceiling] [--seconds 20]
//! [--rounds 3] [--connections 64] [--senders 100] [--age N] [--retain-blocks N]
//! [--no-tx-index]` — with `--age`, each chain first commits N transactions at its ceiling
//! and the measurement follows on the aged chain; `--retain-blocks` sets gpuchain's
//! `min_retain_blocks`; `--no-tx-index` runs both sides without CometBFT's transaction index.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use ed25519_dalek::SigningKey;
use gpuchain_bank::{BankMsg, MsgSend};
use gpuchain_client::keys::Keystore;
use gpuchain_loadgen::{replay, txfile, Report, Tx};
use gpuchain_tests::TestNet;
use gpuchain_tx::{build_signed_tx, Msg, TxParams};
use gpuchain_types::Address;

/// The chain id of the localnets (TestNet's).
const CHAIN_ID: &str = "gpuchain-e2e";

/// Transactions prepared per second of a ceiling run: above either side's ceiling here. A
/// gpuchain sender's nonces go over one connection, and a connection carrying one sender
/// runs dry first: at 15,000 such a connection ran out in a 20-second run at 8,300 tx/s.
const CEILING_TXS_PER_SEC: u64 = 25_000;

#[derive(Parser)]
struct Args {
    /// Validator counts to measure (all on this host).
    #[arg(long, value_delimiter = ',', default_value = "1,4")]
    validators: Vec<usize>,
    /// Offered rates in tx/s; `ceiling` sends as fast as the connections allow.
    #[arg(long, value_delimiter = ',', default_value = "1000,2000,ceiling")]
    rates: Vec<String>,
    /// Seconds of each measured window.
    #[arg(long, default_value_t = 20)]
    seconds: u64,
    /// Alternations of the two sides per setting.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Concurrent RPC connections of the load generator.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// gpuchain accounts sending (each sends its nonces in order on one connection).
    #[arg(long, default_value_t = 100)]
    senders: usize,
    /// Transactions committed at the ceiling before the measurement (0: a fresh chain).
    #[arg(long, default_value_t = 0)]
    age: u64,
    /// What gpuchain's nodes mark for CometBFT's indexer (app.toml `index_events`):
    /// comma-separated entries, `none` for nothing, absent for the localnet's default.
    #[arg(long)]
    index_events: Option<String>,
    /// Blocks CometBFT keeps behind the head on gpuchain's nodes (app.toml
    /// `min_retain_blocks`; 0 keeps all, the localnet's default).
    #[arg(long, default_value_t = 0)]
    retain_blocks: u64,
    /// Runs every node of both sides without CometBFT's transaction index (`indexer =
    /// "null"`), as a validator no client queries may.
    #[arg(long)]
    no_tx_index: bool,
    /// Sides to run: `kvstore` (CometBFT's built-in app, in its process), `gpuchain`
    /// (gpuchaind over the ABCI socket), `gpuchain-inprocess` (`cometbft-gpuchain`, the app
    /// inside CometBFT's process), and `kvstore-socket` (the same kvstore as a separate
    /// process over the ABCI socket, from `abci-cli`: what the transport costs).
    #[arg(long, value_delimiter = ',', default_value = "kvstore,gpuchain")]
    sides: Vec<String>,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let args = Args::parse();
    let mut results: BTreeMap<(usize, String, String), Vec<Report>> = BTreeMap::new();
    let mut turn = 0usize;
    for round in 0..args.rounds {
        for &validators in &args.validators {
            for rate in &args.rates {
                let rate_per_sec = match rate.as_str() {
                    "ceiling" => None,
                    r => Some(r.parse::<u64>().with_context(|| format!("rate {r}"))?),
                };
                let mut sides = args.sides.clone();
                if turn % 2 == 1 {
                    sides.reverse();
                }
                turn += 1;
                for side in sides {
                    let report = measure(&args, &side, validators, rate_per_sec, round).await?;
                    println!(
                        "{}",
                        serde_json::json!({
                            "side": side, "validators": validators, "rate": rate,
                            "round": round, "age": args.age, "report": report,
                        })
                    );
                    results
                        .entry((validators, rate.clone(), side))
                        .or_default()
                        .push(report);
                    // Let the machine settle before the other side's chain starts.
                    tokio::time::sleep(Duration::from_secs(3)).await;
                }
            }
        }
    }
    summarise(&args, &results);
    Ok(())
}

/// One run: a fresh localnet of `side`, its transactions written to a file, replayed.
async fn measure(
    args: &Args,
    side: &str,
    validators: usize,
    rate: Option<u64>,
    round: usize,
) -> Result<Report> {
    let names: Vec<String> = (0..args.senders).map(|i| format!("load{i}")).collect();
    let accounts: Vec<(&str, u128)> = names.iter().map(|n| (n.as_str(), 1u128 << 60)).collect();
    let mut net = TestNet::build_with(validators, &accounts, |spec| {
        spec.timeout_commit_ms = 300;
        spec.min_retain_blocks = args.retain_blocks;
        spec.index_transactions = !args.no_tx_index;
        if let Some(events) = &args.index_events {
            spec.index_events = Some(match events.as_str() {
                "none" => Vec::new(),
                list => list.split(',').map(str::to_string).collect(),
            });
        }
    })?;
    match side {
        "kvstore" => net.start_builtin_kvstore_nodes(0..validators).await?,
        "kvstore-socket" => {
            let abci_cli = std::env::var("ABCI_CLI_BIN")
                .context("kvstore-socket needs ABCI_CLI_BIN (scripts/bench-engine.sh sets it)")?;
            net.start_socket_kvstore_nodes(0..validators, Path::new(&abci_cli))
                .await?
        }
        "gpuchain" => net.start_nodes(0..validators).await?,
        "gpuchain-inprocess" => net.start_in_process_nodes(0..validators).await?,
        other => anyhow::bail!(
            "unknown side {other}: kvstore, kvstore-socket, gpuchain or gpuchain-inprocess"
        ),
    }
    let measured = rate.map_or(CEILING_TXS_PER_SEC * args.seconds, |r| {
        r * (args.seconds + 1)
    });
    let count = usize::try_from(args.age + measured)?;
    let keystore = Keystore::open(&net.net.keys_dir)?;
    let keys = names
        .iter()
        .map(|n| keystore.signing_key(n, None))
        .collect::<Result<Vec<_>>>()?;
    let txs = if side.starts_with("kvstore") {
        // A transfer's size does not depend on the fee parameters' values (borsh encodes
        // integers at fixed width), so the defaults give the size gpuchain's have.
        let one = gpuchain_transfers(&keys, CHAIN_ID, &TxParams::default(), 1);
        txfile::kvstore(
            count,
            one[0].bytes.len(),
            args.connections as u32,
            &format!("r{round}"),
        )
    } else {
        let client = net.client(0)?;
        let (chain_id, params) = (client.chain_id().await?, client.tx_params().await?);
        gpuchain_transfers(&keys, &chain_id, &params, count)
    };
    if let Some(first) = txs.first() {
        eprintln!(
            "{side}: {} transactions of {} bytes",
            txs.len(),
            first.bytes.len()
        );
    }
    let path = net.dir().join("txs.bin");
    txfile::write(&path, &txs)?;
    drop(txs);
    let mut txs = txfile::read(&path)?;
    let plan = replay::Plan {
        nodes: (0..validators)
            .map(|i| {
                net.net.nodes[i]
                    .rpc_url
                    .trim_start_matches("http://")
                    .to_string()
            })
            .collect(),
        rate,
        seconds: args.seconds,
        connections: args.connections,
        drain_seconds: 10,
        processes: net.pids(),
    };
    if args.age > 0 {
        let measured_part = txs.split_off(usize::try_from(args.age)?);
        let ageing = replay::Plan {
            rate: None,
            seconds: 3_600,
            ..plan.clone()
        };
        let aged = replay::run(txs, &ageing).await?;
        eprintln!(
            "{side}: aged by {} committed transactions at {} tx/s",
            aged.committed, aged.committed_per_sec
        );
        txs = measured_part;
    }
    replay::run(txs, &plan).await
}

/// `count` signed 1-token transfers, sender `i % keys.len()` with nonces in order, each
/// sender on its own lane so its nonces arrive in order.
fn gpuchain_transfers(
    keys: &[SigningKey],
    chain_id: &str,
    params: &TxParams,
    count: usize,
) -> Vec<Tx> {
    (0..count)
        .map(|i| {
            let sender = i % keys.len();
            let nonce = (i / keys.len()) as u64;
            let msg = Msg::Bank(BankMsg::Send(MsgSend {
                to: Address([7; 20]),
                amount: 1,
            }));
            Tx {
                lane: sender as u32,
                bytes: build_signed_tx(&keys[sender], chain_id, nonce, params, vec![msg], "")
                    .encode(),
            }
        })
        .collect()
}

/// Medians over the rounds, per setting and side, and gpuchain's ratio to kvstore.
fn summarise(args: &Args, results: &BTreeMap<(usize, String, String), Vec<Report>>) {
    println!(
        "\n| validators | offered | side | committed tx/s (median, min–max) | p50 / p99 ms | CometBFT cores per 1,000 tx/s | app cores | loadgen cores | other cores |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for ((validators, rate, side), reports) in results {
        let rates: Vec<f64> = reports.iter().map(|r| r.committed_per_sec).collect();
        let cores = |label: &str| {
            median(
                &reports
                    .iter()
                    .map(|r| r.cpu_cores.get(label).copied().unwrap_or(0.0))
                    .collect::<Vec<_>>(),
            )
        };
        let per_thousand: Vec<f64> = reports
            .iter()
            .map(|r| {
                r.cpu_cores.get("cometbft").copied().unwrap_or(0.0) * 1000.0
                    / r.committed_per_sec.max(1.0)
            })
            .collect();
        println!(
            "| {validators} | {rate} | {side} | {:.0} ({:.0}–{:.0}) | {:.0} / {:.0} | {:.2} | {:.2} | {:.2} | {:.2} |",
            median(&rates),
            min(&rates),
            max(&rates),
            median(&reports.iter().map(|r| r.latency_ms.p50).collect::<Vec<_>>()),
            median(&reports.iter().map(|r| r.latency_ms.p99).collect::<Vec<_>>()),
            median(&per_thousand),
            cores("app"),
            cores("loadgen"),
            median(&reports.iter().map(|r| r.other_cores).collect::<Vec<_>>()),
        );
    }
    println!();
    for &validators in &args.validators {
        for rate in &args.rates {
            let side = |s: &str| {
                results
                    .get(&(validators, rate.clone(), s.to_string()))
                    .map(|r| median(&r.iter().map(|r| r.committed_per_sec).collect::<Vec<_>>()))
            };
            for ours in ["gpuchain", "gpuchain-inprocess"] {
                for anchor in ["kvstore", "kvstore-socket"] {
                    if let (Some(g), Some(k)) = (side(ours), side(anchor)) {
                        println!(
                            "{validators} validator(s), {rate}: {ours} / {anchor} = {:.2}",
                            g / k.max(1.0)
                        );
                    }
                }
            }
        }
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}
