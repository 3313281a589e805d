//! `gpuchain-loadgen`: replays a transaction file against CometBFT nodes and prints the
//! report as JSON; `kvstore-txs` writes a file for CometBFT's `kvstore` app.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use gpuchain_loadgen::{replay, txfile};

#[derive(Parser)]
#[command(
    version,
    about = "Replays pre-built transactions against CometBFT nodes"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Sends a transaction file's transactions and reports committed tx/s, latency from
    /// the scheduled send time, and CPU.
    Replay {
        /// The transaction file.
        #[arg(long)]
        txs: PathBuf,
        /// A node's RPC address (`127.0.0.1:26657`); repeat for several, blocks are read
        /// from the first.
        #[arg(long = "node", required = true)]
        nodes: Vec<String>,
        /// Offered transactions per second; without it, as fast as the connections allow.
        #[arg(long)]
        rate: Option<u64>,
        /// Length of the measured window.
        #[arg(long, default_value_t = 20)]
        seconds: u64,
        /// Concurrent connections.
        #[arg(long, default_value_t = 64)]
        connections: usize,
        /// Seconds blocks are still read after the window.
        #[arg(long, default_value_t = 10)]
        drain: u64,
        /// A process whose CPU to report, as `label=pid` (repeatable).
        #[arg(long = "process")]
        processes: Vec<String>,
    },
    /// Writes `count` transactions for CometBFT's kvstore app, `size` bytes each.
    KvstoreTxs {
        /// Where to write.
        #[arg(long)]
        out: PathBuf,
        /// How many.
        #[arg(long)]
        count: usize,
        /// Bytes per transaction.
        #[arg(long, default_value_t = 192)]
        size: usize,
        /// Lanes to spread them over.
        #[arg(long, default_value_t = 64)]
        lanes: u32,
        /// Makes this file's keys differ from another run's.
        #[arg(long, default_value = "run")]
        run: String,
    },
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Replay {
            txs,
            nodes,
            rate,
            seconds,
            connections,
            drain,
            processes,
        } => {
            let processes = processes
                .iter()
                .map(|p| {
                    let (label, pid) = p
                        .split_once('=')
                        .with_context(|| format!("--process {p}: expected label=pid"))?;
                    Ok((label.to_string(), pid.parse::<u32>()?))
                })
                .collect::<Result<Vec<_>>>()?;
            let plan = replay::Plan {
                nodes,
                rate,
                seconds,
                connections,
                drain_seconds: drain,
                processes,
            };
            let report = replay::run(txfile::read(&txs)?, &plan).await?;
            println!("{}", serde_json::to_string_pretty(&report)?);
        }
        Command::KvstoreTxs {
            out,
            count,
            size,
            lanes,
            run,
        } => txfile::write(&out, &txfile::kvstore(count, size, lanes, &run))?,
    }
    Ok(())
}
