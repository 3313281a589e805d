//! A verifier lies for profit: it is the only verifier when an honest provider's result is
//! audited, and it posts `faulty` to earn the audit fee and the prover's share of the
//! provider's slash. The real provider agent knows it computed the result, so it appeals;
//! two real verifier agents (bonded after the assignment) re-run the job on the canonical
//! path and overturn the verdict. The liar loses 30% of its bond, half of it to the provider;
//! the provider is paid and never slashed.

use std::time::{Duration, Instant};

use gpuchain_auction::{AuctionMsg, LeaseState};
use gpuchain_client::keys::Keystore;
use gpuchain_tests::{
    blob, digits_input, digits_job, free_port_block, order_leases, provider_cli, routed_order,
    run_json, slash_records, verifier_cli, write_provider_config, AgentSpec, BlobHost,
    ProviderAgent, TestNet, VerifierAgent, VerifierSpec,
};
use gpuchain_tx::Msg;
use gpuchain_verify::{MsgSubmitVerdict, VerdictKind, VerifyMsg};

const GPU: u128 = 1_000_000;
const LIAR_BOND: u128 = 10_000 * GPU;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lying_verifier_is_overturned_by_the_providers_appeal() -> anyhow::Result<()> {
    let accounts = [
        ("client", 10_000 * GPU),
        ("liar", 20_000 * GPU),
        ("v1", 3_000 * GPU),
        ("v2", 3_000 * GPU),
        ("honest", 2_000 * GPU),
    ];
    let net = TestNet::start_with(1, &accounts, |spec| {
        let p = &mut spec.genesis.auction.params;
        p.reveal_window_blocks = 5;
        p.challenge_window_blocks = 3;
        p.verdict_window_blocks = 600;
        p.audit_min_ppm = 1_000_000;
        p.audit_max_ppm = 1_000_000;
        let v = &mut spec.genesis.verify.params;
        v.verdict_deadline_blocks = 200;
        v.appeal_window_blocks = 40;
    })
    .await?;
    let chain = net.client(0)?;
    let node = net.net.nodes[0].rpc_url.clone();
    let dir = tempfile::tempdir()?;
    let ports = free_port_block(5);
    let keys = Keystore::open(&net.net.keys_dir)?;

    let verifier_config = |name: &str, bond: u128, metrics_port: u16| {
        VerifierSpec {
            node: node.clone(),
            keys_home: net.keys_home(),
            key: name.into(),
            dir: dir.path().join(name),
            metrics_port,
            backend: "cpu".into(),
            bond,
            challenge: String::new(),
        }
        .write_config()
    };
    let register = |config: &std::path::Path| -> anyhow::Result<()> {
        let out = verifier_cli(&["register", "--config", config.to_str().unwrap_or_default()])?;
        anyhow::ensure!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    };
    // The liar registers a bond but runs no agent: it answers by hand.
    register(&verifier_config("liar", LIAR_BOND, ports + 4)?)?;

    let spec = AgentSpec {
        node: node.clone(),
        keys_home: net.keys_home(),
        key: "honest".into(),
        dir: dir.path().join("honest"),
        blob_port: ports,
        metrics_port: ports + 1,
        cpu_price: 100_000,
        max_jobs: 2,
        archs: vec!["digits_mlp".into()],
        bond: 1_000 * GPU,
    };
    let config = write_provider_config(&spec, "r-appeal", "cpu")?;
    let out = provider_cli(&["register", "--config", config.to_str().unwrap_or_default()])?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let provider = ProviderAgent::spawn(&config, &[])?;

    let host = BlobHost::start()?;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let weights = std::fs::read(root.join("data/models/digits-mlp.safetensors"))?;
    let w = blob(&weights, host.put("w", weights.clone()));
    let input = digits_input(32, 9);
    let x = blob(&input, host.put("x", input.clone()));
    let client_key = keys.signing_key("client", None)?;
    let order = routed_order(digits_job(w, x), "r-appeal", 1, GPU);
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

    // Audited for sure, and the liar is the only verifier: the case is its.
    let liar = keys.show("liar")?.address;
    let deadline = Instant::now() + Duration::from_secs(150);
    let lease_id = loop {
        let cases = run_json(&[
            "query", "verify", "cases", "--node", &node, "--output", "json",
        ])?;
        let assigned = cases.as_array().and_then(|c| {
            c.iter()
                .find(|c| c["assignee"] == liar.to_string().as_str())
                .and_then(|c| c["lease_id"].as_u64())
        });
        if let Some(id) = assigned {
            break id;
        }
        assert!(
            Instant::now() < deadline,
            "no assignment: {cases}\n{}",
            provider.log_text()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };

    // Two honest verifiers bond and start before the lie, so the appeal can be heard.
    let mut verifiers = Vec::new();
    for (i, name) in ["v1", "v2"].iter().enumerate() {
        let config = verifier_config(name, 1_000 * GPU, ports + 2 + i as u16)?;
        register(&config)?;
        verifiers.push(VerifierAgent::spawn(&config)?);
    }
    let liar_key = keys.signing_key("liar", None)?;
    let lie = VerifyMsg::SubmitVerdict(MsgSubmitVerdict {
        lease_id,
        output_hash: [0xEE; 32],
        verdict: VerdictKind::Faulty,
    });
    chain
        .submit(&liar_key, vec![Msg::Verify(lie)], "")
        .await?
        .ok()?;

    let deadline = Instant::now() + Duration::from_secs(240);
    let lease = loop {
        let leases = order_leases(&chain, order_id).await?;
        if let Some(l) = leases.iter().find(|l| l.state.is_final()) {
            break l.clone();
        }
        assert!(
            Instant::now() < deadline,
            "not settled: {leases:?}\nprovider:\n{}\nv1:\n{}",
            provider.log_text(),
            verifiers[0].log_text()
        );
        tokio::time::sleep(Duration::from_millis(400)).await;
    };
    assert_eq!(lease.state, LeaseState::Paid, "{lease:?}");
    assert!(
        provider
            .log_text()
            .contains("appealed a faulty verdict on a result we computed"),
        "{}",
        provider.log_text()
    );
    let honest = keys.show("honest")?.address;
    let records = slash_records(&node)?;
    assert!(
        records
            .iter()
            .all(|r| r["subject"] != honest.to_string().as_str()),
        "the honest provider is never slashed: {records:?}"
    );
    let liar_slash: Vec<_> = run_json(&[
        "query",
        "verify",
        "verifiers",
        "--node",
        &node,
        "--output",
        "json",
    ])?
    .as_array()
    .cloned()
    .unwrap_or_default()
    .into_iter()
    .filter(|v| v["operator"] == liar.to_string().as_str())
    .collect();
    let bonded = &liar_slash[0]["bonded"];
    let bonded = bonded
        .as_u64()
        .map(u128::from)
        .or_else(|| bonded.as_str()?.parse().ok());
    assert_eq!(
        bonded,
        Some(LIAR_BOND - LIAR_BOND * 3 / 10),
        "the liar loses 30% of its bond"
    );
    // The provider got its deposit back and half the liar's slash, on top of its payment.
    let balance = chain.balance(&honest).await?;
    assert!(
        balance > 2_000 * GPU - 1_000 * GPU + LIAR_BOND * 3 / 20 - GPU,
        "provider balance {balance}"
    );
    Ok(())
}
