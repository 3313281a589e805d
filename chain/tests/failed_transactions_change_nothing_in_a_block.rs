//! Bad input inside a block: undecodable, forged, wrong-chain, replayed and oversized
//! transactions each get their own code and leave every balance, nonce and the supply as
//! they were; an overdraft pays its fee (it was admitted) but moves nothing else.

mod common;

use common::*;
use gpuchain_bank::{module_account, BankRead};
use gpuchain_chain::app::Upgrades;
use gpuchain_chain::{execute_block, BlockOutcome};
use gpuchain_tx::{Tx, TxParams};
use gpuchain_types::{MemState, StateRead};

/// Block 2 holding the one transaction `raw`, executed on `state`.
fn execute_one(state: &MemState, raw: &[u8]) -> BlockOutcome {
    let txs = [raw];
    execute_block(
        state,
        Default::default(),
        &block_input(2, b"h", &txs),
        &Upgrades::new(),
    )
    .unwrap()
}

fn state_after_genesis() -> MemState {
    let (dir, app) = started(2, 1_000_000);
    drop(app);
    // Copy the committed state into memory and execute against it directly.
    let store = gpuchain_chain::Store::open(dir.path()).unwrap();
    let mut mem = MemState::new();
    mem.apply(
        store
            .prefix_raw("")
            .into_iter()
            .map(|(k, v)| (k, Some(v)))
            .collect(),
    );
    mem
}

#[test]
fn failed_transactions_change_nothing_in_a_block() {
    let state = state_after_genesis();
    let params = TxParams::default();
    let mut forged = Tx::decode(&transfer(0, 0, address(1), 5)).unwrap();
    forged.signature[5] ^= 0x40;
    let wrong_chain = {
        let mut tx = Tx::decode(&transfer(0, 0, address(1), 5)).unwrap();
        tx.body.chain_id = "other".into();
        Tx::sign(tx.body, &key(0)).encode()
    };
    let cases: Vec<(Vec<u8>, &str, u32)> = vec![
        (vec![1, 2, 3], "tx", 1),
        (forged.encode(), "tx", 3),
        (wrong_chain, "tx", 4),
        (transfer(0, 7, address(1), 5), "tx", 5),
        (vec![0u8; params.max_tx_bytes as usize + 1], "tx", 2),
    ];
    for (raw, codespace, code) in &cases {
        let out = execute_one(&state, raw);
        let r = &out.tx_results[0];
        assert_eq!(
            (r.codespace.as_str(), r.code),
            (*codespace, *code),
            "{}",
            r.log
        );
        assert!(!r.log.is_empty());
        let keys: Vec<&String> = out.writes.keys().collect();
        assert_eq!(
            keys,
            vec!["chain/height"],
            "only the height may change for {codespace}:{code}"
        );
    }

    let overdraft = transfer(0, 0, address(1), 2_000_000);
    let out = execute_one(&state, &overdraft);
    let r = &out.tx_results[0];
    assert_eq!((r.codespace.as_str(), r.code), ("bank", 1), "{}", r.log);
    let mut after = state.clone();
    after.apply(out.writes);
    let fee = Tx::decode(&overdraft).unwrap().body.fee;
    assert_eq!(after.balance(&address(0)), 1_000_000 - fee);
    assert_eq!(after.balance(&address(1)), 1_000_000);
    // The fee reached the fee pool, which end-block distribution splits between the
    // validators' rewards, the community pool and the verification pool.
    use gpuchain_auction::module_account::{community_pool, rewards_pool, verification_pool};
    let pools = [
        module_account::fee_pool(),
        rewards_pool(),
        community_pool(),
        verification_pool(),
    ];
    assert_eq!(pools.iter().map(|a| after.balance(a)).sum::<u128>(), fee);
    assert_eq!(after.supply(), state.supply());
}
