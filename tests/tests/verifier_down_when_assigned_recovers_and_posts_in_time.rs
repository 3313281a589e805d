//! Network fault: the verifier agent is killed (SIGKILL) before a dispute
//! is assigned to it. The chain assigns the case while the agent is down; restarted, the
//! agent finds the open assignment in chain state, re-executes both replicas and posts its
//! verdicts before the deadline: the cheat is faulted, the honest provider paid, and the
//! verifier keeps its whole bond.

use std::time::{Duration, Instant};

use gpuchain_auction::LeaseState;
use gpuchain_client::keys::Keystore;
use gpuchain_tests::{disputes_only, run_json, slash_records, Market, TestNet, VerifierAgent};

const GPU: u128 = 1_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verifier_down_when_assigned_recovers_and_posts_in_time() -> anyhow::Result<()> {
    let accounts = [
        ("client", 10_000 * GPU),
        ("v1", 3_000 * GPU),
        ("honest", 2_000 * GPU),
        ("cheat", 2_000 * GPU),
    ];
    let net = TestNet::start_with(1, &accounts, disputes_only).await?;
    let node = net.net.nodes[0].rpc_url.clone();
    let market = Market::new(&net)?;
    let vconfig = market.register_verifier("v1", 1_000 * GPU)?;
    // Started once so that it has state on disk, then killed before any assignment.
    let mut verifier = VerifierAgent::spawn(&vconfig)?;
    let started = Instant::now();
    while !verifier.log_text().contains("verifier agent starting") {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "verifier did not start"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    verifier.kill();

    let _agents = [
        market.provider("honest", "r-pair", &[])?,
        market.provider("cheat", "r-pair", &["--dishonest", "random-output"])?,
    ];
    let order_id = market.post_digits_order("client", "r-pair", 2, 5).await?;

    // Both leases disputed and assigned to v1 while its agent is down.
    let deadline = Instant::now() + Duration::from_secs(150);
    loop {
        let cases = run_json(&[
            "query", "verify", "cases", "--node", &node, "--output", "json",
        ])?;
        let assigned = cases
            .as_array()
            .map(|c| c.iter().filter(|c| c["assignee"].is_string()).count())
            .unwrap_or(0);
        if assigned == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "no assignment: {cases}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    let mut verifier = VerifierAgent::spawn(&vconfig)?;
    let leases = market
        .settled(order_id, 2, 150, || verifier.log_text())
        .await?;
    let v1 = Keystore::open(&net.net.keys_dir)?.show("v1")?.address;
    let honest = Keystore::open(&net.net.keys_dir)?.show("honest")?.address;
    for lease in &leases {
        let expected = if lease.provider == honest {
            LeaseState::Paid
        } else {
            LeaseState::Faulted
        };
        assert_eq!(lease.state, expected, "{lease:?}");
    }
    let records = slash_records(&node)?;
    assert!(
        records
            .iter()
            .all(|r| r["subject"] != v1.to_string().as_str()),
        "the verifier is not slashed: {records:?}"
    );
    let verifiers = run_json(&[
        "query",
        "verify",
        "verifiers",
        "--node",
        &node,
        "--output",
        "json",
    ])?;
    let bond = &verifiers[0]["bonded"];
    let bond = bond
        .as_u64()
        .map(u128::from)
        .or_else(|| bond.as_str()?.parse().ok());
    assert_eq!(bond, Some(1_000 * GPU), "{verifiers}");
    assert!(
        verifier.terminate()?,
        "the verifier exits cleanly on SIGTERM"
    );
    Ok(())
}
