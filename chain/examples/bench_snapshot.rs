//! State-sync snapshots in process: how long a snapshot of a state with many accounts takes
//! to write and how big it is, what taking it costs the blocks committed meanwhile, how long
//! a new node's restore of it takes, and the app time of replaying blocks instead.
//!
//! `~/.cache/gpuchain/target/debug/examples/bench_snapshot [accounts] [blocks] [txs_per_block]`
//!
//! Blocks of signed transfers run through FinalizeBlock + Commit; rounds alternate a few
//! blocks with nothing beside them and a snapshot written in the background while blocks
//! go on, and the block times of both sides are compared, with the three slowest blocks'
//! heights. Then the snapshot is restored into an empty store, chunk by chunk as
//! the snapshot connection does (hash checks, tree rebuild, root check, write).

#![allow(clippy::disallowed_types, clippy::disallowed_methods)] // a benchmark, not consensus code

use std::time::Instant;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use ed25519_dalek::SigningKey;
use gpuchain_bank::{BankMsg, MsgSend};
use gpuchain_chain::store::snapshot::{ChunkCheck, Restore, SnapshotPolicy, Snapshotter};
use gpuchain_chain::{App, BlockInput, Store};
use gpuchain_genesis::AppGenesis;
use gpuchain_tx::build_signed_tx;
use gpuchain_tx::{Msg, TxParams};
use gpuchain_types::Address;

fn key(i: u64) -> SigningKey {
    SigningKey::from_bytes(blake3::hash(&i.to_le_bytes()).as_bytes())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let accounts = args.first().copied().unwrap_or(200_000);
    let blocks = args.get(1).copied().unwrap_or(40);
    let per_block = args.get(2).copied().unwrap_or(1_000);

    let keys: Vec<SigningKey> = (0..per_block).map(key).collect();
    let senders: Vec<Address> = keys
        .iter()
        .map(|k| Address::from_public_key(&k.verifying_key().to_bytes()))
        .collect();
    let mut genesis = AppGenesis::default();
    genesis.bank.balances = senders.iter().map(|a| (*a, 1_000_000_000)).collect();
    genesis.bank.balances.extend((0..accounts).map(|i| {
        let pk = *blake3::hash(&(u64::MAX - i).to_le_bytes()).as_bytes();
        (Address::from_public_key(&pk), 1_000_000)
    }));
    let params = TxParams::default();
    eprintln!("signing {} transfers...", blocks * per_block);
    let block_txs: Vec<Vec<Vec<u8>>> = (0..blocks)
        .map(|b| {
            (0..per_block as usize)
                .map(|i| {
                    let to = senders[(i + 1) % senders.len()];
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
    let snapshots = dir.path().join("snapshots");
    let policy = SnapshotPolicy {
        dir: snapshots.clone(),
        interval: 0,
        keep_recent: 100,
        chunk_bytes: 4 << 20,
    };
    let writer = Snapshotter::new(policy.clone());
    let app = App::open_with_proof_window(&dir.path().join("data"), Some(100))?;
    app.init_chain_with("bench", &genesis)?;
    // Rounds alternate: blocks with nothing beside them, as many as the last snapshot
    // overlapped (at least `QUIET`), then a snapshot started after a commit and blocks run
    // until it is complete, so that both sides see the same drift of this shared machine
    // and about as many blocks (a percentile of a dozen quiet blocks is one or two of
    // them). Block 2, the first after the genesis was written, is timed on its own: it
    // flushes the genesis and is slow once in a chain's life.
    const QUIET: u64 = 3;
    let mut quiet_round = QUIET;
    let mut first_block_ms = 0.0;
    let (mut quiet, mut writing) = (Vec::new(), Vec::new());
    let (mut write_secs, mut replay_secs, mut timed) = (Vec::new(), 0.0, 0u64);
    let mut pending: Option<(u64, Instant)> = None;
    let mut last_snapshot = 0;
    let mut since_quiet = 0;
    // Every timed block: (height, seconds, of them in FinalizeBlock, whether a snapshot was
    // being written).
    let mut blocks_timed: Vec<(u64, f64, f64, bool)> = Vec::new();
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
        let finalized = start.elapsed().as_secs_f64();
        app.commit()?;
        let elapsed = start.elapsed().as_secs_f64();
        anyhow::ensure!(outcome.tx_results.iter().all(|r| r.code == 0));
        if height == 1 {
            continue;
        }
        replay_secs += elapsed;
        timed += 1;
        if height == 2 {
            first_block_ms = elapsed * 1e3;
            continue;
        }
        blocks_timed.push((height, elapsed, finalized, pending.is_some()));
        match pending {
            Some((at, started)) => {
                writing.push(elapsed);
                if snapshots.join(at.to_string()).exists() {
                    write_secs.push(started.elapsed().as_secs_f64());
                    pending = None;
                    since_quiet = 0;
                    // The snapshot overlapped every block since the one it was taken at.
                    quiet_round = (height - at).max(QUIET);
                }
            }
            None => {
                quiet.push(elapsed);
                since_quiet += 1;
                if since_quiet >= quiet_round {
                    anyhow::ensure!(app.read_committed(|store| writer.start(store))?);
                    pending = Some((height, Instant::now()));
                    last_snapshot = height;
                }
            }
        }
    }
    if let Some((at, started)) = pending {
        while !snapshots.join(at.to_string()).exists() {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        write_secs.push(started.elapsed().as_secs_f64());
    }
    let snapshot_at = last_snapshot;
    let serving = Snapshotter::new(policy);
    let info = serving
        .list()?
        .into_iter()
        .find(|s| s.height == snapshot_at)
        .ok_or_else(|| anyhow::anyhow!("no snapshot at {snapshot_at}"))?;
    let bytes: u64 = (0..info.chunks)
        .map(|i| serving.chunk(snapshot_at, i).map(|c| c.len() as u64))
        .sum::<anyhow::Result<u64>>()?;
    let app_hash = app.read_committed(|store| store.root_at(snapshot_at))?;

    let target = tempfile::tempdir()?;
    let restore_start = Instant::now();
    let mut restore = Restore::offer(
        info.height,
        info.chunks,
        &info.hash,
        &info.metadata,
        &app_hash,
    )?;
    for i in 0..info.chunks {
        let check = restore.add(i, serving.chunk(snapshot_at, i)?)?;
        anyhow::ensure!(check != ChunkCheck::Mismatch, "chunk {i} mismatched");
    }
    let entries = restore.entries()?;
    let mut store = Store::open(target.path())?;
    store.restore(info.height, &entries, app_hash)?;
    let restore_secs = restore_start.elapsed().as_secs_f64();

    let per_block_replay = replay_secs / timed.max(1) as f64;
    blocks_timed.sort_by(|a, b| b.1.total_cmp(&a.1));
    let slowest: Vec<serde_json::Value> = blocks_timed
        .iter()
        .take(3)
        .map(|(h, secs, finalized, writing)| {
            serde_json::json!({
                "height": h,
                "ms": (secs * 1e4).round() / 10.0,
                "finalize_ms": (finalized * 1e4).round() / 10.0,
                "commit_ms": ((secs - finalized) * 1e4).round() / 10.0,
                "writing": writing,
            })
        })
        .collect();
    let ms = |v: f64| (v * 1e4).round() / 10.0;
    let worst = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let spread = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        let q = |p: usize| v.get(v.len() * p / 100).copied().unwrap_or(0.0);
        [ms(q(10)), ms(q(90))]
    };
    println!(
        "{}",
        serde_json::json!({
            "accounts": accounts + per_block,
            "state_keys": entries.len(),
            "snapshot_chunks": info.chunks,
            "snapshot_bytes": bytes,
            "snapshots_written": write_secs.len(),
            "snapshot_write_secs_median": (median(write_secs) * 1000.0).round() / 1000.0,
            "txs_per_block": per_block,
            "quiet_blocks": quiet.len(),
            "first_block_after_genesis_ms": (first_block_ms * 10.0).round() / 10.0,
            "quiet_block_ms_median": ms(median(quiet.clone())),
            "quiet_block_ms_p10_p90": spread(&quiet),
            "quiet_block_ms_worst": ms(worst(&quiet)),
            "writing_blocks": writing.len(),
            "writing_block_ms_median": ms(median(writing.clone())),
            "writing_block_ms_p10_p90": spread(&writing),
            "writing_block_ms_worst": ms(worst(&writing)),
            "slowest_blocks": slowest,
            "restore_secs": (restore_secs * 1000.0).round() / 1000.0,
            "app_replay_ms_per_block": ms(per_block_replay),
            "app_replay_secs_for_10000_blocks": (per_block_replay * 10_000.0).round(),
        })
    );
    Ok(())
}
