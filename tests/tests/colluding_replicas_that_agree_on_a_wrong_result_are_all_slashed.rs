//! Collusion on a 2-replica order: two providers of one owner win both replicas and reveal
//! the same wrong result (both run the same perturbed model, so their hashes agree). Agreement
//! no longer buys a pass: the chain samples agreeing replicas like lone ones, one re-run by a
//! real verifier agent judges the shared result, and both providers are faulted and slashed;
//! the client gets both replicas back and its share of both slashes.

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
async fn colluding_replicas_that_agree_on_a_wrong_result_are_all_slashed() -> anyhow::Result<()> {
    let accounts = [
        ("client", 10_000 * GPU),
        ("v1", 3_000 * GPU),
        ("c1", 2_000 * GPU),
        ("c2", 2_000 * GPU),
    ];
    let net = TestNet::start_with(1, &accounts, |spec| {
        let p = &mut spec.genesis.auction.params;
        p.reveal_window_blocks = 5;
        p.challenge_window_blocks = 3;
        p.verdict_window_blocks = 400;
        // Every result is sampled, so the test does not wait on the lottery; the sampling of
        // agreeing replicas is what is under test.
        p.audit_min_ppm = 1_000_000;
        p.audit_max_ppm = 1_000_000;
        let v = &mut spec.genesis.verify.params;
        v.verdict_deadline_blocks = 200;
        v.appeal_window_blocks = 2;
    })
    .await?;
    let chain = net.client(0)?;
    let node = net.net.nodes[0].rpc_url.clone();
    let dir = tempfile::tempdir()?;
    let ports = free_port_block(5);
    let keys = Keystore::open(&net.net.keys_dir)?;

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
    let out = verifier_cli(&["register", "--config", vconfig.to_str().unwrap_or_default()])?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verifier = VerifierAgent::spawn(&vconfig)?;

    let mut agents = Vec::new();
    for (i, name) in ["c1", "c2"].iter().enumerate() {
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
        let config = write_provider_config(&spec, "r-collude", "cpu")?;
        let out = provider_cli(&["register", "--config", config.to_str().unwrap_or_default()])?;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        agents.push(ProviderAgent::spawn(
            &config,
            &["--dishonest", "wrong-model"],
        )?);
    }

    let host = BlobHost::start()?;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let weights = std::fs::read(root.join("data/models/digits-mlp.safetensors"))?;
    let w = blob(&weights, host.put("w", weights.clone()));
    let input = digits_input(32, 11);
    let x = blob(&input, host.put("x", input.clone()));
    let client_key = keys.signing_key("client", None)?;
    let client = keys.show("client")?.address;
    let order = routed_order(digits_job(w, x), "r-collude", 2, GPU);
    let out = chain
        .submit(
            &client_key,
            vec![Msg::Auction(AuctionMsg::PostOrder(order))],
            "",
        )
        .await?
        .ok()?;
    let order_id: u64 = out
        .event_attr("auction.order_posted", "order_id")
        .unwrap_or("x")
        .parse()?;

    let deadline = Instant::now() + Duration::from_secs(240);
    let leases = loop {
        let leases = order_leases(&chain, order_id).await?;
        if leases.len() == 2 && leases.iter().all(|l| l.state.is_final()) {
            break leases;
        }
        assert!(
            Instant::now() < deadline,
            "order not settled: {leases:?}\nverifier:\n{}",
            verifier.log_text()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(
        leases[0].result_hash, leases[1].result_hash,
        "the colluders agreed: {leases:?}"
    );
    for lease in &leases {
        assert_eq!(lease.state, LeaseState::Faulted, "{lease:?}");
    }
    let cases = run_json(&[
        "query", "verify", "cases", "--node", &node, "--output", "json",
    ])?;
    let ours = cases
        .as_array()
        .map(|c| {
            c.iter()
                .filter(|c| leases.iter().any(|l| c["lease_id"].as_u64() == Some(l.id)))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(ours, 1, "one re-run judged both replicas: {cases}");
    let records = slash_records(&node)?;
    for name in ["c1", "c2"] {
        let address = keys.show(name)?.address.to_string();
        let slash = records
            .iter()
            .find(|r| r["subject"] == address.as_str())
            .unwrap_or_else(|| panic!("{name} not slashed: {records:?}"));
        let reason = slash["reason"].to_string().to_lowercase();
        assert!(reason.contains("wrong"), "{slash}");
    }
    // The client paid two replicas and the fee, got both back and half of each slash after
    // the audit fee came out of the first.
    let balance = chain.balance(&client).await?;
    assert!(
        balance > 10_000 * GPU,
        "client balance {balance}: refunds plus slash shares exceed what it paid"
    );
    Ok(())
}
