//! Crash consistency under load: while a client keeps sending signed
//! transfers, one validator's app is killed with SIGKILL at a random moment — mid-block,
//! mid-commit or idle, whatever the moment is — with its CometBFT, and both are restarted,
//! again and again. Every time it
//! recovers to the network's app hash, and at the end no committed transaction is lost: each
//! recipient holds exactly what the transfers that committed sent it.
//!
//! CI runs 3 trials; `GPUCHAIN_CRASH_TRIALS=50` is the long run (docs/reliability.md). The
//! kill times come from a seeded generator (`GPUCHAIN_CRASH_SEED`, printed on failure).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gpuchain_bank::{BankMsg, MsgSend};
use gpuchain_client::keys::Keystore;
use gpuchain_tests::TestNet;
use gpuchain_tx::Msg;
use gpuchain_types::Address;

const GPU: u128 = 1_000_000;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// splitmix64: the kill schedule is reproducible from the seed.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apps_killed_at_random_points_under_load_recover() -> anyhow::Result<()> {
    let trials = env_u64("GPUCHAIN_CRASH_TRIALS", 3);
    let seed = env_u64("GPUCHAIN_CRASH_SEED", 7);
    println!("crash trials {trials}, seed {seed} (GPUCHAIN_CRASH_SEED={seed} to replay)");
    let senders = ["s0", "s1", "s2"];
    let accounts: Vec<(&str, u128)> = senders.iter().map(|s| (*s, 1_000 * GPU)).collect();
    let mut net = TestNet::start(4, &accounts).await?;
    let recipients: Vec<Address> = (0..3u8).map(|i| Address([0xC0 + i; 20])).collect();

    // The load: each sender transfers to the recipients in turn through node 0, recording
    // what committed (code 0 with a height).
    let committed: Arc<Mutex<BTreeMap<Address, u128>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let keystore = Keystore::open(&net.net.keys_dir)?;
    let mut load = Vec::new();
    for (i, name) in senders.iter().enumerate() {
        let key = keystore.signing_key(name, None)?;
        let client = net.client(0)?;
        let (committed, stop, recipients) = (committed.clone(), stop.clone(), recipients.clone());
        load.push(tokio::spawn(async move {
            let mut n = 0u128;
            while !stop.load(Ordering::Relaxed) {
                let to = recipients[(i + n as usize) % recipients.len()];
                let amount = 1_000 + n;
                let msg = Msg::Bank(BankMsg::Send(MsgSend { to, amount }));
                if let Ok(out) = client.submit(&key, vec![msg], "").await {
                    if out.code == 0 && out.height > 0 {
                        *committed.lock().unwrap().entry(to).or_default() += amount;
                    }
                }
                n += 1;
            }
        }));
    }

    let mut rng = seed;
    let c0 = net.client(0)?;
    for trial in 0..trials {
        // Somewhere in the next ~2 blocks: during execution, during commit, or between.
        let wait_ms = 100 + next(&mut rng) % 700;
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        net.kill_app(3);
        // CometBFT stops when its app connection drops; stop it for good, as a crashed
        // machine would.
        net.kill_comet(3);
        let down_at = c0.latest_height().await?;
        tokio::time::sleep(Duration::from_millis(200 + next(&mut rng) % 800)).await;
        net.start_app(3, &[])?;
        net.start_comet(3)?;
        // CometBFT's handshake replays what the app lacks; the node then follows the others.
        let c3 = net.client(3)?;
        c3.wait_for_height(down_at + 3, Duration::from_secs(90))
            .await
            .map_err(|e| {
                anyhow::anyhow!("trial {trial} (seed {seed}): node 3 did not recover: {e}")
            })?;
        net.assert_same_app_hash(&[0, 1, 2, 3], down_at + 2)
            .await
            .map_err(|e| anyhow::anyhow!("trial {trial} (seed {seed}): {e}"))?;
        println!("trial {trial}: killed after {wait_ms} ms at height {down_at}, recovered");
    }

    stop.store(true, Ordering::Relaxed);
    for task in load {
        task.await?;
    }
    // Let the last blocks settle everywhere, then check nothing committed was lost.
    let end = c0.latest_height().await? + 2;
    c0.wait_for_height(end, Duration::from_secs(60)).await?;
    net.client(3)?
        .wait_for_height(end, Duration::from_secs(60))
        .await?;
    net.assert_same_app_hash(&[0, 1, 2, 3], end - 1).await?;
    let committed = committed.lock().unwrap().clone();
    assert!(
        committed.values().sum::<u128>() > 0,
        "the load committed transfers"
    );
    for (node, client) in [(0, net.client(0)?), (3, net.client(3)?)] {
        for to in &recipients {
            assert_eq!(
                client.balance(to).await?,
                committed.get(to).copied().unwrap_or(0),
                "node {node}: {to} holds exactly what committed transfers sent it (seed {seed})"
            );
        }
    }
    Ok(())
}
