//! gpuchain-sim: a seeded simulator that drives the real gpuchain app in process, without
//! CometBFT, on a real RocksDB store in a temporary directory. Each block it draws random
//! weighted operations from every module ([`ops::OPS`]: transfers, validator and provider
//! bonding, orders, bids, commits, reveals, cancellations, jailing and unjailing, evidence,
//! verifier bonding, verdicts and appeals, and faulty actors: lazy, lying and silent
//! providers, lazy and lying verifiers, verdicts from the wrong signer, ineligible bids,
//! forged, truncated, replayed and double-spent transactions), builds real signed
//! transactions, and passes them through CheckTx, PrepareProposal, ProcessProposal,
//! FinalizeBlock and Commit as CometBFT would. After every block it checks the invariants
//! ([`invariants`]): supply conserved and only slashes burn, no balance out of range, escrow
//! equals open obligations, the bonded and unbonding pools equal the stakes, open-lease
//! counters match, reputation within [0, 10^6], the verify module accounts hold the
//! verifier bonds, unbondings and appeal deposits, open verify cases hold live leases. Then
//! a liveness phase with faults off must close every order and every verify case. The same
//! seed gives the same app hash at every height ([`run`] with `replay_check`). A failure
//! names the seed and block to replay.

pub mod abci;
pub mod actors;
mod driver;
pub mod invariants;
pub mod mutate;
pub mod ops;
mod report;
mod rng;

use std::cell::Cell;
use std::fmt;

pub use driver::Sim;
pub use report::{per_second, write_ops, OpCount, Report, Stats};
pub use rng::Rng;

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Seed of every random choice.
    pub seed: u64,
    /// Blocks with faults on; the liveness phase follows.
    pub blocks: u64,
    /// Most operations drawn per block (uniform in `0..=max`).
    pub max_ops_per_block: u64,
    /// Run the seed twice and compare app hashes at every height.
    pub replay_check: bool,
}

impl Config {
    /// `blocks` blocks of seed `seed` with the default load and no replay.
    pub fn new(seed: u64, blocks: u64) -> Config {
        Config {
            seed,
            blocks,
            max_ops_per_block: 16,
            replay_check: false,
        }
    }
}

/// A broken invariant, a broken expectation, a stuck order or an app error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Seed to replay.
    pub seed: u64,
    /// Block at which it failed.
    pub height: u64,
    /// Blocks with faults on the failing run was given.
    pub blocks: u64,
    /// What went wrong.
    pub what: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The generator draws the same first blocks whatever the run's length, so a failure
        // with faults on replays with exactly `height` blocks.
        let blocks = if self.height == 0 {
            self.blocks
        } else {
            self.height.min(self.blocks)
        };
        write!(
            f,
            "simulation failed at block {} of seed {}: {}\n  replay: GPUCHAIN_SIM_SEED={} GPUCHAIN_SIM_BLOCKS={} cargo run --bin gpuchain-sim",
            self.height, self.seed, self.what, self.seed, blocks
        )
    }
}

impl std::error::Error for Failure {}

/// Blocks the liveness phase may take: the longest order life cycle (a re-opened bid window,
/// the execution deadline, reveal, verdict and challenge windows; for a case opened in the
/// faulty phase, three verify rounds each missed once, and the appeal window) plus slack.
fn liveness_bound(
    p: &gpuchain_auction::AuctionParams,
    v: &gpuchain_verify::VerifyParams,
    s: &gpuchain_serving::ServingParams,
) -> u64 {
    let auction = p
        .max_bid_window_blocks
        .saturating_mul(2)
        .saturating_add(p.max_exec_deadline_blocks)
        .saturating_add(p.reveal_window_blocks)
        .saturating_add(p.verdict_window_blocks)
        .saturating_add(p.challenge_window_blocks);
    let verify = v
        .verdict_deadline_blocks
        .saturating_mul(6)
        .saturating_add(v.appeal_window_blocks);
    // A serving order opened in the last faulty block: its bid window, its leases, the claim
    // grace, then a claim audited at the last moment: the reveal, every juror missing, the
    // appeal window, and every appeal juror missing.
    let juries = s
        .verdict_window_blocks
        .saturating_mul(u64::from(s.max_jury_draws))
        .saturating_mul(2);
    let serving = s
        .max_bid_window_blocks
        .saturating_add(s.max_duration_blocks)
        .saturating_add(s.claim_grace_blocks)
        .saturating_add(s.reveal_window_blocks)
        .saturating_add(juries)
        .saturating_add(s.appeal_window_blocks);
    auction
        .saturating_add(verify)
        .max(serving)
        .saturating_add(10)
}

#[allow(clippy::disallowed_methods)] // wall time for the report only, never in state
fn now() -> std::time::Instant {
    std::time::Instant::now()
}

fn run_once(config: &Config, height: &Cell<u64>) -> Result<(Report, Vec<[u8; 32]>), Failure> {
    let start = now();
    let mut sim = Sim::new(config).map_err(|e| Failure {
        seed: config.seed,
        height: 0,
        blocks: config.blocks,
        what: format!("genesis: {e:#}"),
    })?;
    for _ in 0..config.blocks {
        height.set(sim.height.saturating_add(1));
        sim.step(true)?;
    }
    let bound = liveness_bound(&sim.auction, &sim.verify, &sim.serving);
    let mut liveness = 0;
    loop {
        height.set(sim.height.saturating_add(1));
        sim.step(false)?;
        liveness += 1;
        match sim.settled() {
            Ok(()) => break,
            Err(e) if liveness >= bound => {
                return Err(Failure {
                    seed: config.seed,
                    height: sim.height,
                    blocks: config.blocks,
                    what: format!("liveness: after {liveness} blocks without faults, {e}"),
                })
            }
            Err(_) => {}
        }
    }
    let elapsed_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    let report = Report {
        seed: config.seed,
        safety_blocks: config.blocks,
        liveness_blocks: liveness,
        stats: sim.stats.clone(),
        app_hash: sim.hashes.last().copied().unwrap_or_default(),
        census: sim.census(),
        elapsed_ms,
        replayed: false,
    };
    Ok((report, sim.hashes))
}

/// Runs one seed; with `replay_check`, runs it again on a fresh store and requires the same
/// app hash at every height. A panic anywhere becomes a [`Failure`] at the block it hit.
pub fn run(config: &Config) -> Result<Report, Failure> {
    let height = Cell::new(0);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let (mut report, hashes) = run_once(config, &height)?;
        if config.replay_check {
            let (_, again) = run_once(config, &height)?;
            if let Some(i) = hashes.iter().zip(&again).position(|(a, b)| a != b) {
                return Err(Failure {
                    seed: config.seed,
                    height: u64::try_from(i).unwrap_or(u64::MAX).saturating_add(1),
                    blocks: config.blocks,
                    what: "replay gave a different app hash".into(),
                });
            }
            if hashes.len() != again.len() {
                return Err(Failure {
                    seed: config.seed,
                    height: u64::try_from(hashes.len().min(again.len())).unwrap_or(u64::MAX),
                    blocks: config.blocks,
                    what: "replay ran a different number of blocks".into(),
                });
            }
            report.replayed = true;
        }
        Ok(report)
    }));
    match caught {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(Failure {
                seed: config.seed,
                height: height.get(),
                blocks: config.blocks,
                what: format!("panic: {what}"),
            })
        }
    }
}
