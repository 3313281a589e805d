//! App-only throughput: signed transfers through FinalizeBlock + Commit in process (RocksDB
//! and the Merkle tree included), blocks of 5,000 transactions, on one thread; and the
//! ed25519 batch-verification ceiling for the same signatures on the same machine.
//!
//! `cargo run -p gpuchain-chain --example bench_app [blocks] [txs_per_block] [proof_heights]`
//!
//! With `proof_heights` (0 = archive, the default) the store prunes what only older heights
//! can read, and the report adds the state directory's size, sampled through the run, to
//! show disk growth with and without pruning.

#![allow(clippy::disallowed_types, clippy::disallowed_methods)] // a benchmark, not consensus code

use std::time::Instant;

/// The node's allocator (`gpuchaind`'s main.rs), so that the app is measured as it runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use ed25519_dalek::SigningKey;
use gpuchain_bank::{BankMsg, MsgSend};
use gpuchain_chain::{App, BlockInput};
use gpuchain_genesis::AppGenesis;
use gpuchain_tx::build_signed_tx;
use gpuchain_tx::{sign_bytes, Msg, Tx, TxParams};
use gpuchain_types::Address;

fn key(i: u64) -> SigningKey {
    SigningKey::from_bytes(blake3::hash(&i.to_le_bytes()).as_bytes())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let blocks = args.first().copied().unwrap_or(6);
    let per_block = args.get(1).copied().unwrap_or(5_000);
    let proof_heights = args.get(2).copied().filter(|&h| h > 0);
    let senders = per_block;
    let keys: Vec<SigningKey> = (0..senders).map(key).collect();
    let addrs: Vec<Address> = keys
        .iter()
        .map(|k| Address::from_public_key(&k.verifying_key().to_bytes()))
        .collect();

    let mut genesis = AppGenesis::default();
    genesis.bank.balances = addrs.iter().map(|a| (*a, 1_000_000_000)).collect();
    let params = TxParams::default();
    eprintln!("signing {} transfers...", blocks * per_block);
    let block_txs: Vec<Vec<Vec<u8>>> = (0..blocks)
        .map(|b| {
            (0..per_block as usize)
                .map(|i| {
                    let to = addrs[(i + 1) % addrs.len()];
                    let msgs = vec![Msg::Bank(BankMsg::Send(MsgSend {
                        to,
                        amount: 1 + b as u128,
                    }))];
                    build_signed_tx(&keys[i], "bench", b, &params, msgs, "").encode()
                })
                .collect()
        })
        .collect();

    let dir = tempfile::tempdir()?;
    let app = App::open_with_proof_window(dir.path(), proof_heights)?;
    let mut state_mib = Vec::new();
    app.init_chain_with("bench", &genesis)?;
    // Block 1 carries genesis (5,000 accounts); time the blocks after it. Right after each
    // timed block, batch-verify the same block's signatures (keys parsed beforehand, as a
    // verifier's cache would hold them): the ceiling is measured next to the block it is
    // compared with, so the machine's speed drifting over the run cancels out in the ratio.
    let (mut app_secs, mut verify_secs, mut block_ratios) = (0.0, 0.0, Vec::new());
    for (b, txs) in block_txs.iter().enumerate() {
        let refs: Vec<&[u8]> = txs.iter().map(Vec::as_slice).collect();
        let height = b as u64 + 1;
        let hash = blake3::hash(&height.to_le_bytes());
        let start = Instant::now();
        let (outcome, _) = app.finalize(&BlockInput {
            height,
            hash: hash.as_bytes(),
            time_ms: height.saturating_mul(1_000),
            txs: &refs,
            misbehavior: &[],
            votes: &[],
        })?;
        app.commit()?;
        let elapsed = start.elapsed().as_secs_f64();
        let failed = outcome.tx_results.iter().filter(|r| r.code != 0).count();
        anyhow::ensure!(
            failed == 0,
            "{failed} transactions failed in block {height}"
        );
        if b > 0 {
            let verify = verify_ceiling(txs);
            app_secs += elapsed;
            verify_secs += verify;
            block_ratios.push(verify / elapsed);
        }
        if blocks <= 40 {
            let v = if b > 0 {
                *block_ratios.last().unwrap()
            } else {
                0.0
            };
            eprintln!(
                "block {height}: {} txs in {elapsed:.3}s ratio {v:.3}",
                txs.len()
            );
        }
        if height.is_multiple_of((blocks / 10).max(1)) {
            state_mib.push((height, dir_bytes(dir.path()) / (1 << 20)));
        }
    }
    let proven_query_us = proven_query_micros(&app, &addrs);
    let timed_txs = (block_ratios.len() as f64) * per_block as f64;
    let app_tps = timed_txs / app_secs;
    let verify_tps = timed_txs / verify_secs;
    block_ratios.sort_by(f64::total_cmp);
    let median_ratio = block_ratios
        .get(block_ratios.len() / 2)
        .copied()
        .unwrap_or(0.0);

    println!(
        "{}",
        serde_json::json!({
            "blocks_timed": block_ratios.len(),
            "txs_per_block": per_block,
            "app_txs_per_sec": app_tps.round(),
            "batch_verify_sigs_per_sec": verify_tps.round(),
            "ratio_app_to_verify_ceiling": (app_tps / verify_tps * 1000.0).round() / 1000.0,
            "median_block_ratio": (median_ratio * 1000.0).round() / 1000.0,
            "proof_heights": proof_heights.unwrap_or(0),
            "proven_account_query_p50_us": proven_query_us,
            "state_mib_at_height": state_mib,
        })
    );
    Ok(())
}

/// Median microseconds of a proven `/bank/account/<addr>` query at the latest height (the
/// client's balance check), over 200 accounts: after pruning, the value column family holds
/// the range deletions of every pruned write.
fn proven_query_micros(app: &App, addrs: &[Address]) -> u64 {
    use tendermint_abci::Application;
    let mut micros: Vec<u64> = addrs
        .iter()
        .step_by((addrs.len() / 200).max(1))
        .map(|addr| {
            let start = Instant::now();
            let response = app.query(tendermint_proto::v0_38::abci::RequestQuery {
                path: format!("/bank/account/{addr}"),
                prove: true,
                ..Default::default()
            });
            let elapsed = start.elapsed().as_micros() as u64;
            assert_eq!(response.code, 0, "{}", response.log);
            assert!(response.proof_ops.is_some(), "no proof returned");
            elapsed
        })
        .collect();
    micros.sort_unstable();
    micros.get(micros.len() / 2).copied().unwrap_or(0)
}

/// Seconds to batch-verify the signatures of `txs`, keys already parsed.
fn verify_ceiling(txs: &[Vec<u8>]) -> f64 {
    let txs: Vec<Tx> = txs.iter().map(|raw| Tx::decode(raw).unwrap()).collect();
    let messages: Vec<Vec<u8>> = txs.iter().map(|t| sign_bytes(&t.body)).collect();
    let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
    let (keys, sigs): (Vec<_>, Vec<_>) = txs
        .iter()
        .map(|t| {
            let key = ed25519_dalek::VerifyingKey::from_bytes(&t.public_key).unwrap();
            (key, ed25519_dalek::Signature::from_bytes(&t.signature))
        })
        .unzip();
    let start = Instant::now();
    ed25519_dalek::verify_batch(&refs, &sigs, &keys).expect("valid batch");
    start.elapsed().as_secs_f64()
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}
