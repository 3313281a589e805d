//! Network fault (issue 8, part 4): the verifier agent is killed (SIGKILL) before a dispute
//! is assigned to it. The chain assigns the case while the agent is down; restarted, the
//! agent finds the open assignment in chain state, re-executes both replicas and posts its
//! verdicts before the deadline: the cheat is faulted, the honest provider paid, and the
//! verifier keeps its whole bond.

use std::time::{Duration, Instant};

use gpuchain_auction::{AuctionMsg, LeaseState};
use gpuchain_client::keys::Keystore;
use gpuchain_tests::{
    blob, digits_input, digits_job, free_port_block, order_leases, provider_cli, routed_order,
    run_json, slash_records, verifier_cli, write_provider_config, AgentSpec, BlobHost,
    ProviderAgent, TestNet, VerifierAgent, VerifierSpec,
};
use gpuchain_tx::Msg;

const GPU: u128 = 1_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verifier_down_when_assigned_recovers_and_posts_in_time() -> anyhow::Result<()> {
    let accounts = [
        ("client", 10_000 * GPU),
        ("v1", 3_000 * GPU),
        ("honest", 2_000 * GPU),
        ("cheat", 2_000 * GPU),
    ];
    let net = TestNet::start_with(1, &accounts, |spec| {
        let p = &mut spec.genesis.auction.params;
        p.reveal_window_blocks = 5;
        p.challenge_window_blocks = 3;
        p.verdict_window_blocks = 400;
        p.audit_min_ppm = 0;
        p.audit_max_ppm = 0;
        let v = &mut spec.genesis.verify.params;
        v.verdict_deadline_blocks = 200;
        v.appeal_window_blocks = 2;
    })
    .await?;
    let chain = net.client(0)?;
    let node = net.net.nodes[0].rpc_url.clone();
    let dir = tempfile::tempdir()?;
    let ports = free_port_block(5);

    let vconfig = VerifierSpec {
        node: node.clone(),
        keys_home: net.keys_home(),
        key: "v1".into(),
        dir: dir.path().join("v1"),
        metrics_port: ports + 4,
        backend: "cpu".into(),
        bond: 1_000 * GPU,
        challenge: String::new(),
    }
    .write_config()?;
    let vpath = vconfig.to_str().unwrap_or_default();
    let out = verifier_cli(&["register", "--config", vpath])?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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

    let mut agents = Vec::new();
    for (i, (name, cheat)) in [("honest", None), ("cheat", Some("random-output"))]
        .iter()
        .enumerate()
    {
        let spec = AgentSpec {
            node: node.clone(),
            keys_home: net.keys_home(),
            key: name.to_string(),
            dir: dir.path().join(name),
            blob_port: ports + 2 * i as u16,
            metrics_port: ports + 2 * i as u16 + 1,
            cpu_price: 100_000,
            max_jobs: 2,
            archs: vec!["digits_mlp".into()],
            bond: 1_000 * GPU,
        };
        let config = write_provider_config(&spec, "r-pair", "cpu")?;
        let path = config.to_str().unwrap_or_default();
        let out = provider_cli(&["register", "--config", path])?;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let extra: Vec<&str> = cheat.map(|k| vec!["--dishonest", k]).unwrap_or_default();
        agents.push(ProviderAgent::spawn(&config, &extra)?);
    }

    let host = BlobHost::start()?;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let weights = std::fs::read(root.join("data/models/digits-mlp.safetensors"))?;
    let w = blob(&weights, host.put("w", weights.clone()));
    let input = digits_input(32, 5);
    let x = blob(&input, host.put("x", input.clone()));
    let key = Keystore::open(&net.net.keys_dir)?.signing_key("client", None)?;
    let order = routed_order(digits_job(w, x), "r-pair", 2, GPU);
    let out = chain
        .submit(&key, vec![Msg::Auction(AuctionMsg::PostOrder(order))], "")
        .await?
        .ok()?;
    let order_id: u64 = out
        .event_attr("auction.order_posted", "order_id")
        .unwrap_or("x")
        .parse()?;

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
    let deadline = Instant::now() + Duration::from_secs(150);
    let leases = loop {
        let leases = order_leases(&chain, order_id).await?;
        if leases.len() == 2 && leases.iter().all(|l| l.state.is_final()) {
            break leases;
        }
        assert!(
            Instant::now() < deadline,
            "order not settled: {leases:?}\n{}",
            verifier.log_text()
        );
        tokio::time::sleep(Duration::from_millis(400)).await;
    };
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
