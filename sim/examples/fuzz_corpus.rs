//! Writes the seed corpus of the fuzz targets into `fuzz/corpus/<target>/`: valid signed
//! transactions carrying one message of every kind (for `tx_decode`), the same behind a
//! raw-bytes mode byte and random choice streams behind a mutation mode byte (for
//! `check_tx`), and small blocks of both (for `finalize_block`).
//!
//! `cargo build --workspace --all-targets && $CARGO_TARGET_DIR/debug/examples/fuzz_corpus`
//! (from the repository root; build the whole workspace so RocksDB is not rebuilt)

use gpuchain_sim::actors::{population, CHAIN_ID};
use gpuchain_sim::mutate::random_msg;
use gpuchain_sim::Rng;
use gpuchain_tx::build_signed_tx;
use gpuchain_tx::TxParams;

fn write(target: &str, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let dir = std::path::Path::new("fuzz/corpus").join(target);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(name), bytes)
}

fn main() -> std::io::Result<()> {
    let actors = population();
    let mut rng = Rng::new(1);
    for i in 0..24u64 {
        let actor = &actors[(i as usize) % actors.len()];
        let msg = random_msg(&mut rng, &actors);
        let tx = build_signed_tx(&actor.key, CHAIN_ID, 0, &TxParams::default(), vec![msg], "");
        let raw = tx.encode();
        write("tx_decode", &format!("valid-{i:02}"), &raw)?;
        write(
            "check_tx",
            &format!("raw-{i:02}"),
            &[[0u8].as_slice(), &raw].concat(),
        )?;
        write(
            "check_tx",
            &format!("mutate-{i:02}"),
            &[[1u8].as_slice(), &rng.bytes(96)].concat(),
        )?;
        let block = [[0u8].as_slice(), &raw, &[0xFF, 1], &rng.bytes(64)].concat();
        write("finalize_block", &format!("block-{i:02}"), &block)?;
    }
    Ok(())
}
