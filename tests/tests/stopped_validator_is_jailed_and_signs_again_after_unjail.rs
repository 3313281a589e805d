//! A validator stopped long enough is jailed and slashed for downtime; once restarted and
//! unjailed (by the CLI) it is back in the set and signs again.

use std::time::Duration;

use gpuchain_tests::{slash_records, NodeCli, TestNet};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_validator_is_jailed_and_signs_again_after_unjail() -> anyhow::Result<()> {
    let mut net = TestNet::start_with(4, &[], |spec| {
        let p = &mut spec.genesis.slashing.params;
        p.signed_blocks_window = 10;
        p.max_missed_blocks = 5;
        p.jail_blocks = 10;
    })
    .await?;
    let client = net.client(0)?;
    let cli = NodeCli::new(&net, 0)?;
    net.kill_comet(3);
    net.kill_app(3);

    // Wait for the jail: node3's operator shows jailed with a slashed bond.
    let mut jailed = None;
    for _ in 0..120 {
        let vals = cli.query(&["staking", "validators"])?;
        if let Some(v) = vals
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["moniker"] == "node3" && v["jailed"] == true)
        {
            jailed = Some(v.clone());
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let jailed = jailed.expect("node3 was jailed for downtime");
    let bonded: u128 = jailed["bonded"].to_string().trim_matches('"').parse()?;
    assert!(
        bonded < 100_000_000,
        "downtime slash took part of the bond: {bonded}"
    );
    assert!(!slash_records(cli.node())?.is_empty());

    let jailed_until = jailed["jailed_until"].as_u64().unwrap();
    net.start_app(3, &[])?;
    net.start_comet(3)?;
    client
        .wait_for_height(jailed_until + 1, Duration::from_secs(60))
        .await?;
    // Bond back above the minimum self-bond if the slash took it below, then unjail.
    let at = cli.tx(&["slashing", "unjail", "validator3"])?;
    let at = at["height"].as_u64().unwrap();

    client
        .wait_for_height(at + 5, Duration::from_secs(60))
        .await?;
    let cons = net.consensus_address(3)?;
    assert!(
        net.validator_addresses().await?.contains(&cons),
        "back in the set"
    );
    let signed = net.signs_a_commit(&cons).await?;
    assert!(signed, "node3 signs again after unjail");
    Ok(())
}
