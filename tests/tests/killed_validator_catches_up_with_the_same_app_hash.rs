//! kill -9 one validator's app and CometBFT mid-run: the other three keep producing blocks;
//! restarted, it catches up and its app hash matches theirs.

use std::time::Duration;

use gpuchain_tests::TestNet;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_validator_catches_up_with_the_same_app_hash() -> anyhow::Result<()> {
    let mut net = TestNet::start(4, &[]).await?;
    let c0 = net.client(0)?;
    let before = c0.latest_height().await?;
    net.kill_comet(3);
    net.kill_app(3);

    c0.wait_for_height(before + 5, Duration::from_secs(60))
        .await?;
    let while_down = c0.latest_height().await?;

    net.start_app(3, &[])?;
    net.start_comet(3)?;
    let c3 = net.client(3)?;
    c3.wait_for_height(while_down + 2, Duration::from_secs(90))
        .await?;
    net.assert_same_app_hash(&[0, 1, 2, 3], while_down + 1)
        .await?;
    Ok(())
}
