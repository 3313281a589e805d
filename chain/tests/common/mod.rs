//! Fixtures for in-process app tests: deterministic keys, a funded genesis, and blocks of
#![allow(unreachable_pub, dead_code)] // shared by several test binaries, each using a part
//! signed transfers.

use ed25519_dalek::SigningKey;
use gpuchain_bank::{BankMsg, MsgSend};
use gpuchain_chain::{App, BlockInput};
use gpuchain_genesis::AppGenesis;
use gpuchain_tx::build_signed_tx;
use gpuchain_tx::{Msg, TxParams};
use gpuchain_types::Address;

pub const CHAIN_ID: &str = "gpuchain-test";

pub fn key(i: u32) -> SigningKey {
    SigningKey::from_bytes(blake3::hash(&i.to_le_bytes()).as_bytes())
}

pub fn address(i: u32) -> Address {
    Address::from_public_key(&key(i).verifying_key().to_bytes())
}

pub fn genesis(accounts: u32, each: u128) -> AppGenesis {
    let mut g = AppGenesis::default();
    g.bank.balances = (0..accounts).map(|i| (address(i), each)).collect();
    g
}

pub fn transfer(from: u32, nonce: u64, to: Address, amount: u128) -> Vec<u8> {
    let msgs = vec![Msg::Bank(BankMsg::Send(MsgSend { to, amount }))];
    build_signed_tx(&key(from), CHAIN_ID, nonce, &TxParams::default(), msgs, "").encode()
}

pub fn open(dir: &std::path::Path, g: &AppGenesis) -> App {
    let app = App::open(dir).unwrap();
    app.init_chain_with(CHAIN_ID, g).unwrap();
    app
}

/// An app past its first (empty) block on a fresh store, with `accounts` funded with `each`;
/// the directory lives as long as the caller keeps it.
pub fn started(accounts: u32, each: u128) -> (tempfile::TempDir, App) {
    let dir = tempfile::tempdir().unwrap();
    let app = open(dir.path(), &genesis(accounts, each));
    run_block(&app, 1, &[]);
    (dir, app)
}

/// Executes and commits one block; returns the app hash.
pub fn run_block(app: &App, height: u64, txs: &[Vec<u8>]) -> [u8; 32] {
    let refs: Vec<&[u8]> = txs.iter().map(Vec::as_slice).collect();
    let hash = blake3::hash(&height.to_le_bytes());
    let (_, app_hash) = app
        .finalize(&block_input(height, hash.as_bytes(), &refs))
        .unwrap();
    app.commit().unwrap();
    app_hash
}

/// A block with no evidence and no signatures recorded, on a chain making one block a second.
pub fn block_input<'a>(height: u64, hash: &'a [u8], txs: &'a [&'a [u8]]) -> BlockInput<'a> {
    BlockInput {
        height,
        hash,
        time_ms: height.saturating_mul(1_000),
        txs,
        misbehavior: &[],
        votes: &[],
    }
}
