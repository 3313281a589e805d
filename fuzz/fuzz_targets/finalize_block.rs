//! FinalizeBlock of the real app on a block of up to eight transactions cut from the input:
//! each one arbitrary bytes or a structure-aware mutation of a valid signed transaction.
//! The block is executed on top of the same committed state every time (never committed), so
//! runs are reproducible. Never panics, and an execution error (a broken invariant inside
//! the app) is a crash.
#![no_main]

use std::sync::OnceLock;

use gpuchain_sim::mutate::{mutated_tx, Draw, Harness, InputDraw};
use libfuzzer_sys::fuzz_target;

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| Harness::new().expect("fuzz harness"))
}

fuzz_target!(|data: &[u8]| {
    let h = harness();
    let mut txs = Vec::new();
    for chunk in data.split(|b| *b == 0xFF).take(8) {
        let Some((&mode, rest)) = chunk.split_first() else {
            continue;
        };
        if mode % 2 == 0 {
            txs.push(rest.to_vec());
        } else {
            let mut d = InputDraw::new(rest);
            let _ = d.below(1);
            txs.push(mutated_tx(&mut d, &h.actors, |a| h.nonce(a)));
        }
    }
    if let Err(e) = h.block(&txs, false) {
        panic!("FinalizeBlock failed: {e:#}");
    }
});
