//! A fifth node joins a 4-validator localnet by create-validator (signed by the CLI) and
//! starts signing blocks; when it unbonds everything it leaves CometBFT's validator set.

use std::time::Duration;

use gpuchain_tests::{NodeCli, TestNet};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validator_joins_with_create_validator_and_leaves_by_unbonding() -> anyhow::Result<()> {
    let net = TestNet::start_with(4, &[("joiner", 1_000_000_000)], |spec| {
        spec.extra_nodes = 1;
        spec.genesis.staking.params.unbonding_blocks = 5;
    })
    .await?;
    let key_file = net.net.nodes[4]
        .comet_home
        .join("config/priv_validator_key.json");
    let joiner_cons = net.consensus_address(4)?;
    assert!(!net.validator_addresses().await?.contains(&joiner_cons));

    let cli = NodeCli::new(&net, 0)?;
    let joined_at = cli.tx(&[
        "staking",
        "create-validator",
        "joiner",
        "--consensus-key",
        key_file.to_str().unwrap(),
        "--moniker",
        "node4",
        "--self-bond",
        "100000000",
    ])?;
    let joined_at = joined_at["height"].as_u64().unwrap();

    // CometBFT applies a set change two blocks later; then node4 signs.
    let client = net.client(0)?;
    client
        .wait_for_height(joined_at + 4, Duration::from_secs(60))
        .await?;
    assert!(
        net.validator_addresses().await?.contains(&joiner_cons),
        "joiner is in /validators"
    );
    let signed = net.signs_a_commit(&joiner_cons).await?;
    assert!(signed, "node4 signs blocks");

    let vals = cli.query(&["staking", "validators"])?;
    assert_eq!(vals.as_array().unwrap().len(), 5);

    let left_at = cli.tx(&["staking", "unbond", "joiner", "100000000"])?;
    let left_at = left_at["height"].as_u64().unwrap();
    client
        .wait_for_height(left_at + 4, Duration::from_secs(60))
        .await?;
    assert!(
        !net.validator_addresses().await?.contains(&joiner_cons),
        "joiner left the set"
    );

    // The bond comes back after unbonding_blocks.
    let joiner = net.net.account("joiner")?;
    client
        .wait_for_height(left_at + 8, Duration::from_secs(60))
        .await?;
    let balance = client.balance(&joiner).await?;
    assert!(
        balance > 999_000_000,
        "bond returned, only fees spent: {balance}"
    );
    Ok(())
}
