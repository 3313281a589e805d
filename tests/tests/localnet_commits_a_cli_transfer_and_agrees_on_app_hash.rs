//! A 4-validator localnet of real CometBFT processes commits a transfer signed by the CLI,
//! and all four nodes report the same app hash at the same height.

use std::time::Duration;

use gpuchain_tests::{cli, NodeCli, TestNet};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn localnet_commits_a_cli_transfer_and_agrees_on_app_hash() -> anyhow::Result<()> {
    let net = TestNet::start(4, &[("alice", 5_000_000)]).await?;

    let node_cli = NodeCli::new(&net, 1)?;
    let bob_addr = node_cli.add_key("bob")?;
    let node = node_cli.node();
    let outcome = node_cli.tx(&["bank", "send", "alice", &bob_addr, "1234"])?;
    assert_eq!(outcome["code"], 0);
    let height = outcome["height"].as_u64().unwrap();
    assert!(height > 0);

    // `query tx` finds it by hash; an unknown hash is "not found", a malformed one says so.
    let hash = outcome["hash"].as_str().unwrap().to_string();
    let found = node_cli.query(&["tx", &hash.to_lowercase()])?;
    assert_eq!(
        (found["height"].as_u64(), found["code"].as_u64()),
        (Some(height), Some(0))
    );
    let unknown = cli(&["query", "tx", &"AB".repeat(32), "--node", node])?;
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        !unknown.status.success() && err.contains("not found"),
        "{err}"
    );
    let malformed = cli(&["query", "tx", "0xnothex", "--node", node])?;
    let err = String::from_utf8_lossy(&malformed.stderr);
    assert!(
        !malformed.status.success() && err.contains("not a transaction hash"),
        "{err}"
    );

    // Every node sees the transfer, with a proof checked against the header's app hash.
    for i in 0..4 {
        let v = NodeCli::new(&net, i)?.query(&["bank", "balance", &bob_addr, "--prove"])?;
        assert_eq!(v["balance"], "1234", "node{i}");
    }
    let alice = net.net.account("alice")?;
    let paid = net.client(0)?.balance(&alice).await?;
    assert!(paid < 5_000_000 - 1234, "fee was charged: {paid}");

    net.client(3)?
        .wait_for_height(height + 2, Duration::from_secs(30))
        .await?;
    net.assert_same_app_hash(&[0, 1, 2, 3], height).await?;

    // Each node's Prometheus metrics: its height, the transfer among the finalized
    // transactions on every node, the mempool's verdicts on the node that took it (an
    // overdraft rejected by the bank), the market's gauges and the database's size.
    let overdraft = node_cli.tx_output(&["bank", "send", "alice", &bob_addr, "999999999999"])?;
    assert!(!overdraft.status.success(), "an overdraft is refused");
    let value = TestNet::metric_value;
    for i in 0..4 {
        let text = net.scrape_metrics(i)?;
        assert!(
            value(&text, "gpuchain_node_height").unwrap_or(0) >= height,
            "{text}"
        );
        assert!(
            value(&text, "gpuchain_node_txs_total{outcome=\"ok\"}") >= Some(1),
            "{text}"
        );
        assert!(
            value(&text, "gpuchain_node_state_disk_bytes") > Some(0),
            "{text}"
        );
        assert_eq!(value(&text, "gpuchain_node_open_orders"), Some(0), "{text}");
        assert!(
            text.contains("gpuchain_node_finalize_block_seconds_total "),
            "{text}"
        );
        assert!(text.contains("process_resident_memory_bytes "), "{text}");
    }
    let text = net.scrape_metrics(1)?;
    assert!(
        value(&text, "gpuchain_node_checktx_total{result=\"accepted\"}") >= Some(1),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l
                .starts_with("gpuchain_node_checktx_total{result=\"rejected\",codespace=\"bank\"")),
        "the overdraft's rejection is counted by code: {text}"
    );
    Ok(())
}
