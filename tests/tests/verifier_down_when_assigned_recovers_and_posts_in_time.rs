//! Network fault: the verifier agent is killed (SIGKILL) before a dispute
//! is assigned to it. The chain assigns the case while the agent is down; restarted, the
//! agent finds the open assignment in chain state, re-executes both replicas and posts its
//! verdicts before the deadline: the cheat is faulted, the honest provider paid, and the
//! verifier keeps its whole bond.

use std::time::{Duration, Instant};

use gpuchain_auction::LeaseState;
use gpuchain_client::keys::Keystore;
use gpuchain_tests::{
    amount, disputes_only, slash_records, slashes_of, Market, NodeCli, TestNet, VerifierAgent,
};

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
    let cli = NodeCli::new(&net, 0)?;
    let market = Market::new(&net)?;
    let vconfig = market.register_verifier("v1", 1_000 * GPU)?;
    // Started once so that it has state on disk, then killed before any assignment.
    let mut verifier = VerifierAgent::spawn(&vconfig)?;
    let started = Instant::now();
    while !verifier.started() {
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
        let cases = cli.query(&["verify", "cases"])?;
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
    let records = slash_records(cli.node())?;
    assert!(
        slashes_of(&records, &v1.to_string()).is_empty(),
        "the verifier is not slashed: {records:?}"
    );
    let verifiers = cli.query(&["verify", "verifiers"])?;
    assert_eq!(amount(&verifiers[0]["bonded"]), 1_000 * GPU, "{verifiers}");
    assert!(
        verifier.terminate()?,
        "the verifier exits cleanly on SIGTERM"
    );
    Ok(())
}
