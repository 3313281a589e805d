//! State sync on a 4-validator localnet: validators take a snapshot every 40 heights; a
//! fifth node started with CometBFT's `statesync` on (trust height and hash from our light
//! client, verified against a second node) restores the newest snapshot instead of
//! replaying the chain, then follows blocks with the same app hash. Two validators serve
//! tampered chunks (their snapshot files are altered on disk as they appear): the new node
//! refuses each with a log line naming the sender and fetches it from another peer. Those
//! two also let CometBFT delete old blocks (`min_retain_blocks`), which a node that joins
//! from a snapshot does not need.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use gpuchain_client::LightClient;
use gpuchain_tests::TestNet;

/// Flips the first byte of every chunk file under `snapshots` not flipped yet.
fn tamper_new_chunks(snapshots: &Path, done: &mut BTreeSet<std::path::PathBuf>) {
    let Ok(dirs) = std::fs::read_dir(snapshots) else {
        return;
    };
    for dir in dirs.flatten() {
        if dir.file_name().to_string_lossy().ends_with(".partial") {
            continue;
        }
        let Ok(files) = std::fs::read_dir(dir.path()) else {
            continue;
        };
        for file in files.flatten() {
            let path = file.path();
            let is_chunk = file.file_name().to_string_lossy().starts_with("chunk-");
            if !is_chunk || done.contains(&path) {
                continue;
            }
            if let Ok(mut bytes) = std::fs::read(&path) {
                if let Some(first) = bytes.first_mut() {
                    *first ^= 0xff;
                    if std::fs::write(&path, &bytes).is_ok() {
                        done.insert(path);
                    }
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_node_joins_by_state_sync_and_refuses_a_tampered_chunk() -> anyhow::Result<()> {
    let mut net = TestNet::build_with(4, &[("alice", 1_000_000_000)], |spec| {
        spec.extra_nodes = 1;
        // One snapshot (height 40) while the new node discovers them, so every peer offers
        // the same newest one.
        spec.snapshot_interval = 40;
        // Tiny chunks, so that a snapshot has dozens and the tampering peers serve some.
        spec.snapshot_chunk_bytes = 128;
    })?;
    // Nodes 0 and 1 keep only the blocks they must: the new node needs none before its
    // snapshot. (Nodes 2 and 3 keep theirs: the light client starts from an old header.)
    for i in [0, 1] {
        let path = net.net.nodes[i].app_home.join("app.toml");
        let text = std::fs::read_to_string(&path)?
            .replace("min_retain_blocks = 0", "min_retain_blocks = 10");
        std::fs::write(&path, text)?;
    }
    net.start_nodes(0..4).await?;
    let joiner = 4;
    let c0 = net.client(0)?;
    let c1 = net.client(1)?;

    // The trusted header: first use on node 0 at height 3, then a later header verified
    // from node 1 through the light client.
    let dir = tempfile::tempdir()?;
    let mut light = LightClient::open(dir.path().join("light.json"))?;
    c0.wait_for_height(8, Duration::from_secs(60)).await?;
    light.verify(&c0, 3).await?;
    let trust_height = 6;
    let trusted = light.verify(&c1, trust_height).await?;
    let trust_hash = trusted.header.hash().to_string();

    let stop = Arc::new(AtomicBool::new(false));
    let tamperers: Vec<_> = [0, 1]
        .into_iter()
        .map(|i| {
            let snapshots = net.net.nodes[i].app_home.join("snapshots");
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut done = BTreeSet::new();
                while !stop.load(Ordering::Relaxed) {
                    tamper_new_chunks(&snapshots, &mut done);
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        })
        .collect();
    // The snapshot of height 40 exists (and is tampered on nodes 0 and 1) before the new
    // node asks.
    c0.wait_for_height(43, Duration::from_secs(90)).await?;
    std::thread::sleep(Duration::from_millis(200));

    let config = net.net.nodes[joiner]
        .comet_home
        .join("config")
        .join("config.toml");
    let mut text = std::fs::read_to_string(&config)?;
    text.push_str(&format!(
        "\n[statesync]\nenable = true\nrpc_servers = \"{},{}\"\ntrust_height = {trust_height}\n\
         trust_hash = \"{trust_hash}\"\ntrust_period = \"168h0m0s\"\ndiscovery_time = \"5s\"\n\
         chunk_request_timeout = \"5s\"\n",
        net.net.nodes[2].rpc_url, net.net.nodes[3].rpc_url
    ));
    std::fs::write(&config, text)?;
    net.start_app(joiner, &[])?;
    net.start_comet(joiner)?;

    let cj = net.client(joiner)?;
    let head = c0.latest_height().await?;
    cj.wait_for_height(head + 5, Duration::from_secs(120))
        .await?;
    stop.store(true, Ordering::Relaxed);
    for t in tamperers {
        let _ = t.join();
    }

    let status = cj.status().await?;
    let earliest = status.sync_info.earliest_block_height.value();
    assert!(
        earliest >= 40,
        "the new node's first block is {earliest}: it replayed instead of restoring a snapshot"
    );
    let pruned = c0.status().await?.sync_info.earliest_block_height.value();
    assert!(
        pruned > 1,
        "node 0 kept every block despite min_retain_blocks"
    );
    let at = cj.latest_height().await? - 1;
    net.assert_same_app_hash(&[0, 2, joiner], at).await?;

    let log = std::fs::read_to_string(net.logs_dir().join(format!("node{joiner}-app.log")))?;
    assert!(
        log.contains("state restored from the snapshot"),
        "no restore in the new node's log:\n{log}"
    );
    assert!(
        log.contains("refused a state-sync chunk that does not match the hash its snapshot lists"),
        "the tampered chunks were never refused:\n{log}"
    );
    Ok(())
}
