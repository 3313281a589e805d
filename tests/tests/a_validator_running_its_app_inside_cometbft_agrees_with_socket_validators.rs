//! One of four validators runs as `cometbft-gpuchain` (CometBFT with the app inside its
//! process); the other three run CometBFT and gpuchaind over the ABCI socket. The
//! in-process node takes a CLI transfer into its mempool, answers a proven query and serves
//! its app's metrics; all four agree on the app hash; killed with -9 and restarted, it
//! catches up from its own database and still agrees.

use std::time::Duration;

use gpuchain_tests::{NodeCli, TestNet};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_validator_running_its_app_inside_cometbft_agrees_with_socket_validators(
) -> anyhow::Result<()> {
    let mut net = TestNet::build_with(4, &[("alice", 5_000_000)], |_| {})?;
    for i in 0..3 {
        net.start_app(i, &[])?;
    }
    for i in 0..3 {
        net.start_comet(i)?;
    }
    net.start_in_process(3)?;
    net.wait_for_first_blocks(0..4).await?;

    let in_process = NodeCli::new(&net, 3)?;
    let bob_addr = in_process.add_key("bob")?;
    let outcome = in_process.tx(&["bank", "send", "alice", &bob_addr, "1234"])?;
    assert_eq!(outcome["code"], 0, "{outcome}");
    let height = outcome["height"].as_u64().unwrap();
    let proven = in_process.query(&["bank", "balance", &bob_addr, "--prove"])?;
    assert_eq!(proven["balance"], "1234");
    let overdraft = in_process.tx_output(&["bank", "send", "alice", &bob_addr, "999999999999"])?;
    assert!(!overdraft.status.success(), "CheckTx refuses an overdraft");

    let metrics = net.scrape_metrics(3)?;
    assert!(
        TestNet::metric_value(&metrics, "gpuchain_node_txs_total{outcome=\"ok\"}") >= Some(1),
        "{metrics}"
    );
    net.client(3)?
        .wait_for_height(height + 2, Duration::from_secs(30))
        .await?;
    net.assert_same_app_hash(&[0, 1, 2, 3], height).await?;

    // Killed mid-run: the others go on; restarted, it replays what it missed.
    net.kill_comet(3);
    let c0 = net.client(0)?;
    let before = c0.latest_height().await?;
    c0.wait_for_height(before + 4, Duration::from_secs(60))
        .await?;
    let while_down = c0.latest_height().await?;
    net.start_in_process(3)?;
    net.client(3)?
        .wait_for_height(while_down + 2, Duration::from_secs(90))
        .await?;
    net.assert_same_app_hash(&[0, 1, 2, 3], while_down + 1)
        .await?;
    let after = NodeCli::new(&net, 3)?.query(&["bank", "balance", &bob_addr, "--prove"])?;
    assert_eq!(after["balance"], "1234");
    Ok(())
}
