//! `gpuchain-sim`: runs seeded simulations of the gpuchain app and prints a report per seed
//! and a summary. Exits non-zero on the first failure, printing the seed and block to replay.
//!
//! ```text
//! gpuchain-sim --seed 7 --blocks 500 --replay-check
//! gpuchain-sim --seeds 1..20 --blocks 5000
//! GPUCHAIN_SIM_SEED=7 GPUCHAIN_SIM_BLOCKS=123 gpuchain-sim
//! ```

use std::process::ExitCode;

use clap::Parser;
use gpuchain_sim::{per_second, run, write_ops, Config, Stats};

/// Seeded simulation of the gpuchain app with invariants after every block.
#[derive(Parser, Debug)]
#[command(name = "gpuchain-sim")]
struct Args {
    /// One seed.
    #[arg(long, env = "GPUCHAIN_SIM_SEED", default_value_t = 1)]
    seed: u64,
    /// A range of seeds `A..B` (B excluded); overrides --seed.
    #[arg(long)]
    seeds: Option<String>,
    /// Blocks with faults on per seed; a liveness phase follows.
    #[arg(long, env = "GPUCHAIN_SIM_BLOCKS", default_value_t = 500)]
    blocks: u64,
    /// Most operations per block.
    #[arg(long, default_value_t = 16)]
    max_ops: u64,
    /// Run each seed twice and require the same app hash at every height.
    #[arg(long)]
    replay_check: bool,
    /// Print only the summary.
    #[arg(long)]
    quiet: bool,
}

fn seeds(args: &Args) -> Result<std::ops::Range<u64>, String> {
    let Some(spec) = &args.seeds else {
        return Ok(args.seed..args.seed.saturating_add(1));
    };
    let (a, b) = spec
        .split_once("..")
        .ok_or_else(|| format!("--seeds wants A..B, got {spec}"))?;
    let parse = |s: &str| s.parse::<u64>().map_err(|e| format!("--seeds {spec}: {e}"));
    Ok(parse(a)?..parse(b)?)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let range = match seeds(&args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut total = Stats::new();
    let mut elapsed_ms = 0u64;
    let count = range.end.saturating_sub(range.start);
    for seed in range {
        let config = Config {
            seed,
            blocks: args.blocks,
            max_ops_per_block: args.max_ops,
            replay_check: args.replay_check,
        };
        match run(&config) {
            Ok(report) => {
                if args.quiet {
                    println!(
                        "seed {seed}: ok, {} blocks, {} ops, {} blocks/s",
                        report.stats.blocks,
                        report.stats.operations(),
                        per_second(report.stats.blocks, report.elapsed_ms)
                    );
                } else {
                    print!("{report}");
                }
                total.merge(&report.stats);
                elapsed_ms = elapsed_ms.saturating_add(report.elapsed_ms);
            }
            Err(failure) => {
                eprintln!("{failure}");
                return ExitCode::FAILURE;
            }
        }
    }
    let mut table = String::new();
    let _ = write_ops(&mut table, &total);
    println!(
        "summary: {count} seeds, {} blocks, {} operations, {} transactions, {} blocks/s{}",
        total.blocks,
        total.operations(),
        total.total().txs,
        per_second(total.blocks, elapsed_ms),
        if args.replay_check {
            " (each seed replayed)"
        } else {
            ""
        }
    );
    if count > 1 && !args.quiet {
        print!("{table}");
    }
    ExitCode::SUCCESS
}
