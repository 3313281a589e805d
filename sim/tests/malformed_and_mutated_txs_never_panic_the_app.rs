//! The no-panic property without cargo-fuzz: random bytes, random messages of every module
//! with edge values, and valid signed transactions mutated in structure and bytes go through
//! CheckTx and FinalizeBlock (unfiltered, as a faulty proposer could send them); every
//! result has a code, nothing panics, and the invariants hold after every committed block.
//! `GPUCHAIN_ROBUST_ITERATIONS` sets the number of transactions (default 3,000).

use gpuchain_sim::mutate::{mutated_tx, Harness};
use gpuchain_sim::Rng;

#[test]
fn malformed_and_mutated_txs_never_panic_the_app() {
    let iterations: u64 = std::env::var("GPUCHAIN_ROBUST_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    let h = Harness::new().unwrap();
    let mut rng = Rng::new(0xF022);
    let mut block = Vec::new();
    let (mut admitted, mut passed) = (0u64, 0u64);
    for i in 0..iterations {
        let raw = if rng.below(4) == 0 {
            let len = usize::try_from(rng.below(400)).unwrap();
            rng.bytes(len)
        } else {
            mutated_tx(&mut rng, &h.actors, |a| h.nonce(a))
        };
        if h.check_tx(&raw) == 0 {
            admitted += 1;
        }
        block.push(raw);
        if block.len() == 25 || i + 1 == iterations {
            let codes = h
                .block(&block, true)
                .unwrap_or_else(|e| panic!("iteration {i}: {e}"));
            passed += codes.iter().filter(|c| **c == 0).count() as u64;
            block.clear();
        }
    }
    eprintln!("{iterations} inputs: {admitted} admitted by CheckTx, {passed} passed in blocks");
    assert!(
        passed > 0,
        "some mutated transactions are still valid and pass"
    );
}
