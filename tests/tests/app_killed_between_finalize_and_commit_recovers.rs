//! The app dies between FinalizeBlock and Commit (test hook: abort at Commit of a chosen
//! height). On restart CometBFT's handshake replays the block and the node rejoins with the
//! same app hash as its peers.

use std::time::Duration;

use gpuchain_tests::TestNet;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_killed_between_finalize_and_commit_recovers() -> anyhow::Result<()> {
    let mut net = TestNet::start(4, &[]).await?;
    let c0 = net.client(0)?;
    let crash_at = c0.latest_height().await? + 4;

    // Restart node 3's app with the crash hook armed.
    net.kill_comet(3);
    net.kill_app(3);
    net.start_app(
        3,
        &[("GPUCHAIN_CRASH_BEFORE_COMMIT_AT", &crash_at.to_string())],
    )?;
    net.start_comet(3)?;
    assert!(
        net.wait_app_exit(3, Duration::from_secs(60))?,
        "app did not hit the crash hook"
    );
    net.kill_comet(3);

    // The network goes on without it.
    c0.wait_for_height(crash_at + 3, Duration::from_secs(60))
        .await?;

    net.start_app(3, &[])?;
    net.start_comet(3)?;
    let c3 = net.client(3)?;
    let target = c0.latest_height().await?;
    c3.wait_for_height(target + 1, Duration::from_secs(90))
        .await?;
    net.assert_same_app_hash(&[0, 3], crash_at).await?;
    net.assert_same_app_hash(&[0, 1, 2, 3], target).await?;
    Ok(())
}
