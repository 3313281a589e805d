//! CheckTx of the real app (RocksDB, simulator genesis, one block committed) on arbitrary
//! bytes (first byte even) or on a valid signed transaction mutated in structure and bytes
//! as the rest of the input dictates (first byte odd). Never panics.
#![no_main]

use std::sync::OnceLock;

use gpuchain_sim::mutate::{mutated_tx, Harness, InputDraw};
use libfuzzer_sys::fuzz_target;

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| Harness::new().expect("fuzz harness"))
}

fuzz_target!(|data: &[u8]| {
    let h = harness();
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        h.check_tx(rest);
    } else {
        let mut d = InputDraw::new(rest);
        let raw = mutated_tx(&mut d, &h.actors, |a| h.nonce(a));
        h.check_tx(&raw);
    }
});
