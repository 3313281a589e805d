//! CheckTx answers the transactions CometBFT hands over together (their signatures in one
//! batch) exactly as it answers them one at a time: valid ones in nonce order, a forgery
//! among them, a replay, a wrong nonce, garbage. The block then judges every signature as
//! CheckTx did, whatever shares its batch.
//!
//! Who would profit from a difference: a forger whose transaction rides in on honest
//! neighbours' batch, or a spammer whose transaction CheckTx admits and the block refuses
//! (block space for free).

mod common;

use common::*;
use gpuchain_chain::TxResult;
use gpuchain_tx::Tx;

fn forged(from: u32, nonce: u64) -> Vec<u8> {
    let mut tx = Tx::decode(&transfer(from, nonce, address(9), 3)).unwrap();
    tx.signature[40] ^= 0x08;
    tx.encode()
}

fn verdict(r: &TxResult) -> (u32, String, String) {
    (r.code, r.codespace.clone(), r.log.clone())
}

#[test]
fn checking_transactions_together_gives_what_checking_them_alone_gives() {
    let honest: Vec<Vec<u8>> = vec![
        transfer(0, 0, address(1), 5),
        transfer(0, 1, address(1), 6),
        transfer(2, 0, address(1), 7),
        transfer(0, 2, address(1), 8),
    ];
    let mixed: Vec<Vec<u8>> = vec![
        transfer(1, 0, address(2), 1),
        forged(1, 1),
        transfer(1, 1, address(2), 2),
        vec![1, 2, 3],
        transfer(2, 5, address(1), 1),
        transfer(0, 2, address(1), 8),
        forged(3, 0),
        transfer(3, 0, address(1), 4),
    ];

    let (_together_dir, together) = started(4, 1_000_000);
    let (_alone_dir, alone) = started(4, 1_000_000);

    let mut verdicts_together = Vec::new();
    for group in [&honest, &mixed] {
        let txs: Vec<(&[u8], bool)> = group.iter().map(|t| (t.as_slice(), false)).collect();
        verdicts_together.extend(together.check_txs(&txs).iter().map(verdict));
    }
    let verdicts_alone: Vec<_> = honest
        .iter()
        .chain(&mixed)
        .map(|t| verdict(&alone.check_txs(&[(t.as_slice(), false)])[0]))
        .collect();
    assert_eq!(verdicts_together, verdicts_alone);

    let codes: Vec<(u32, &str)> = verdicts_together
        .iter()
        .map(|(code, space, _)| (*code, space.as_str()))
        .collect();
    let ok = (0, "");
    let bad_signature = (3, "tx");
    let bad_nonce = (5, "tx");
    assert_eq!(
        codes,
        vec![
            ok,
            ok,
            ok,
            ok,
            ok,
            bad_signature,
            ok,
            (1, "tx"),
            bad_nonce,
            bad_nonce,
            bad_signature,
            ok
        ],
        "{verdicts_together:?}"
    );

    // A block of the same transactions in another order judges each signature alike, in
    // the batch that passes and in the one that holds forgeries.
    let block: Vec<Vec<u8>> = mixed.iter().chain(&honest).cloned().collect();
    let refs: Vec<&[u8]> = block.iter().map(Vec::as_slice).collect();
    let hash = blake3::hash(b"2");
    let (outcome, _) = together
        .finalize(&block_input(2, hash.as_bytes(), &refs))
        .unwrap();
    let signature_refused: Vec<bool> = outcome
        .tx_results
        .iter()
        .map(|r| (r.code, r.codespace.as_str()) == bad_signature)
        .collect();
    let forgeries: Vec<bool> = block
        .iter()
        .map(|raw| *raw == forged(1, 1) || *raw == forged(3, 0))
        .collect();
    assert_eq!(signature_refused, forgeries);
}
