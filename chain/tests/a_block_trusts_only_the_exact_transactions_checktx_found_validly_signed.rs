//! A node does not check again, in a block, the signatures its CheckTx already found valid.
//! The block's outcome must be what a node that never saw those transactions computes.
//!
//! Who would profit from a difference: a forger who copies the signature of a transaction
//! the nodes checked onto a body of their own (another amount, another recipient), hoping
//! the block takes the copy for the transaction that was checked.

mod common;

use common::*;
use gpuchain_bank::BankMsg;
use gpuchain_chain::{App, TxResult};
use gpuchain_tx::{Msg, Tx};

/// `tx`, a transfer, with its amount changed and its key and signature kept.
fn with_copied_signature(tx: &[u8], amount: u128) -> Vec<u8> {
    let mut copy = Tx::decode(tx).unwrap();
    let [Msg::Bank(BankMsg::Send(send))] = copy.body.msgs.as_mut_slice() else {
        panic!("not one transfer: {:?}", copy.body.msgs);
    };
    send.amount = amount;
    copy.encode()
}

fn results(app: &App, height: u64, txs: &[&[u8]]) -> (Vec<(u32, String)>, [u8; 32]) {
    let hash = blake3::hash(&height.to_le_bytes());
    let (outcome, app_hash) = app
        .finalize(&block_input(height, hash.as_bytes(), txs))
        .unwrap();
    app.commit().unwrap();
    let codes = outcome
        .tx_results
        .iter()
        .map(|r: &TxResult| (r.code, r.codespace.clone()))
        .collect();
    (codes, app_hash)
}

#[test]
fn a_block_trusts_only_the_exact_transactions_checktx_found_validly_signed() {
    let honest = transfer(0, 0, address(7), 5);
    let other = transfer(1, 0, address(7), 6);
    let copy = with_copied_signature(&honest, 900_000);
    let block_2: Vec<&[u8]> = vec![&copy, &honest, &other];
    // Included once; the same bytes again are a replay.
    let block_3: Vec<&[u8]> = vec![&honest];

    let (_checked_dir, checked) = started(2, 1_000_000);
    let (_fresh_dir, fresh) = started(2, 1_000_000);

    let admitted = checked.check_txs(&[(&honest, false), (&other, false)]);
    assert!(admitted.iter().all(|r| r.code == 0), "{admitted:?}");

    let (codes, hash) = results(&checked, 2, &block_2);
    assert_eq!(
        codes,
        vec![(3, "tx".into()), (0, String::new()), (0, String::new())],
        "the copy's signature is refused, the checked transactions go through"
    );
    assert_eq!((codes, hash), results(&fresh, 2, &block_2));

    let (codes, hash) = results(&checked, 3, &block_3);
    assert_eq!(codes, vec![(5, "tx".into())], "a replay is a bad nonce");
    assert_eq!((codes, hash), results(&fresh, 3, &block_3));
}
