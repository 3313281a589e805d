//! The short CI simulation: a few seeds of a few hundred blocks of random operations from
//! every module with faulty actors mixed in, invariants after every block, then a liveness
//! phase in which every order and every verify case must close. `GPUCHAIN_SIM_SEEDS` and `GPUCHAIN_SIM_BLOCKS`
//! make it longer; the long run is `cargo run --release --bin gpuchain-sim` (docs/reliability.md).

use gpuchain_sim::{run, Config, Stats};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn random_blocks_keep_every_invariant_and_settle() {
    let seeds = env("GPUCHAIN_SIM_SEEDS", 3);
    let blocks = env("GPUCHAIN_SIM_BLOCKS", 300);
    let mut total = Stats::new();
    for seed in 0..seeds {
        match run(&Config::new(seed, blocks)) {
            Ok(report) => {
                eprint!("{report}");
                total.merge(&report.stats);
            }
            Err(failure) => panic!("{failure}"),
        }
    }
    let t = total.total();
    eprintln!(
        "{seeds} seeds: {} blocks, {} operations, {} transactions, {} passed",
        total.blocks,
        total.operations(),
        t.txs,
        t.passed
    );
    // The run must exercise the market, not just refuse everything.
    let passed = |name: &str| total.ops.get(name).map_or(0, |c| c.passed);
    assert!(
        passed("auction.post_order") > seeds * 20,
        "orders were posted"
    );
    assert!(passed("auction.bid") > seeds * 20, "bids were placed");
    assert!(passed("auction.commit") > 0 && passed("auction.reveal") > 0);
    assert!(passed("staking.register_provider") > 0 && passed("slashing.unjail") > 0);
    assert!(
        passed("verify.submit_verdict") > 0,
        "verifiers posted verdicts"
    );
    assert!(passed("verify.register_verifier") > 0 && passed("verify.appeal") > 0);
    assert!(
        passed("serving.claim") > seeds * 10 && passed("serving.reveal") > 0,
        "serving claims were paid and audited receipts revealed"
    );
    assert!(
        passed("serving.verdict") > 0 && passed("serving.appeal") > 0,
        "drawn verifiers judged receipts and standing verdicts were appealed"
    );
    assert!(total.invariant_checks >= total.blocks * 8);
}
