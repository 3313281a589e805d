//! Kill between FinalizeBlock and Commit, in process: the reopened store is at the previous
//! height, and replaying the block reproduces the same app hash.

mod common;

use common::*;
use gpuchain_chain::App;

#[test]
fn uncommitted_block_is_replayed_after_a_crash() {
    let g = genesis(2, 1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let app = open(dir.path(), &g);
    run_block(&app, 1, &[transfer(0, 0, address(1), 5)]);
    let txs = [transfer(0, 1, address(1), 7)];
    let refs: Vec<&[u8]> = txs.iter().map(Vec::as_slice).collect();
    let hash = blake3::hash(b"block 2");
    let input = block_input(2, hash.as_bytes(), &refs);
    let (_, expected) = app.finalize(&input).unwrap();
    let after_block_1 = app.committed();
    drop(app); // the "crash": no Commit

    let app = App::open(dir.path()).unwrap();
    assert_eq!(
        app.committed(),
        after_block_1,
        "nothing of block 2 reached the disk"
    );
    let (_, replayed) = app.finalize(&input).unwrap();
    assert_eq!(replayed, expected);
    app.commit().unwrap();
    assert_eq!(app.committed(), (2, expected));
}
