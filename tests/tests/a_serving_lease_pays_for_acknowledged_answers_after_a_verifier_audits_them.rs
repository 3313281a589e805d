//! A serving lease on a real localnet, every process real: a client opens a serving order for
//! SmolLM2 with `gpuchaind tx serving open`; a provider agent configured to serve that model
//! bids and wins the lease; its `serve-model` endpoint answers on the lease and writes a
//! receipt per answer; the client's `gpuchain-gateway` signs each request, checks every
//! receipt against what arrived and acknowledges batches; the provider agent claims them;
//! with audits on every claim, the provider agent reveals the drawn receipt and a verifier
//! agent re-checks the answer by teacher forcing and calls it honest, so the provider is paid
//! exactly for the units the client was told, nobody is slashed, and when the client ends
//! the order the rest of the deposit goes back and escrow is empty.

use std::time::Duration;

use anyhow::{ensure, Context};
use gpuchain_serving::{ServingLease, ServingOrder, ServingOrderState, ServingRead};
use gpuchain_tests::serving::{gateway_logged, serve_model_on_leases, smollm2_path};
use gpuchain_tests::{
    cli, free_port_block, provider_cli, verifier_cli, write_provider_config, AgentSpec,
    ProviderAgent, TestNet, VerifierAgent, VerifierSpec,
};
use serde_json::{json, Value};

const GPU: u128 = 1_000_000;
/// The provider's bid, ugpu per million tokens.
const PRICE: u64 = 400_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serving_lease_pays_for_acknowledged_answers_after_a_verifier_audits_them(
) -> anyhow::Result<()> {
    let accounts = [
        ("client", 1_000 * GPU),
        ("provider", 3_000 * GPU),
        ("verifier", 3_000 * GPU),
    ];
    let net = TestNet::start_with(1, &accounts, |spec| {
        let p = &mut spec.genesis.serving.params;
        // Every claim is audited, so the whole audit path runs.
        p.audit_ppm = 1_000_000;
        p.second_opinion_ppm = 0;
        p.reveal_window_blocks = 100;
        p.verdict_window_blocks = 200;
        p.claim_grace_blocks = 10;
    })
    .await?;
    let node = net.net.nodes[0].rpc_url.clone();
    let home = net.keys_home();
    let home_s = home.to_string_lossy().to_string();
    let dir = tempfile::tempdir()?;
    let model = smollm2_path();
    let hash = blake3::hash(&std::fs::read(&model)?).to_hex().to_string();

    // A verifier that can audit SmolLM2 answers.
    let vconfig = VerifierSpec {
        node: node.clone(),
        keys_home: home.clone(),
        key: "verifier".into(),
        dir: dir.path().join("verifier"),
        metrics_port: free_port_block(1),
        backend: "cpu".into(),
        bond: 1_000 * GPU,
        challenge: String::new(),
    }
    .write_config()?;
    append(
        &vconfig,
        &format!(
            "[serving]\n[[serving.models]]\nname = \"smollm2\"\nblake3 = \"{hash}\"\npath = \"{}\"\n",
            model.display()
        ),
    )?;
    let out = verifier_cli(&["register", "--config", &vconfig.to_string_lossy()])?;
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _verifier = VerifierAgent::spawn(&vconfig)?;

    // A provider agent that bids on SmolLM2 serving orders and claims from its endpoint's
    // receipts.
    let receipts = dir.path().join("provider-receipts");
    let ports = free_port_block(2);
    let pconfig = write_provider_config(
        &AgentSpec {
            node: node.clone(),
            keys_home: home.clone(),
            key: "provider".into(),
            dir: dir.path().join("provider"),
            blob_port: ports,
            metrics_port: ports + 1,
            cpu_price: 100_000,
            max_jobs: 1,
            archs: vec!["digits_mlp".into()],
            bond: 1_000 * GPU,
        },
        "local",
        "cpu",
    )?;
    append(
        &pconfig,
        &format!(
            "[serving]\nreceipts = \"{}\"\n[[serving.models]]\nname = \"smollm2\"\nblake3 = \"{hash}\"\nprice = {PRICE}\n",
            receipts.display()
        ),
    )?;
    let out = provider_cli(&["register", "--config", &pconfig.to_string_lossy()])?;
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _provider = ProviderAgent::spawn(&pconfig, &[])?;
    let provider_addr = key_address(&home_s, "provider")?;

    // The client opens the order; the agent bids; the chain clears it.
    let out = cli(&[
        "tx",
        "serving",
        "open",
        "client",
        "--model",
        "smollm2",
        "--model-hash",
        &hash,
        "--providers",
        "1",
        "--max-price",
        "1000000",
        "--duration",
        "2000",
        "--bid-window",
        "15",
        "--deposit",
        &(50 * GPU).to_string(),
        "--home",
        &home_s,
        "--node",
        &node,
        "--output",
        "json",
    ])?;
    ensure!(
        out.status.success(),
        "open: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let chain = net.client(0)?;
    let lease: ServingLease = {
        let mut found = None;
        for _ in 0..150 {
            let state = chain
                .snapshot(gpuchain_serving::state_key::module_prefix())
                .await?;
            if let Some(l) = state.serving_leases().into_iter().next() {
                found = Some(l);
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        found.context("no lease: the provider agent did not win the order")?
    };
    ensure!(lease.provider.to_string() == provider_addr);
    ensure!(
        lease.price == u128::from(PRICE),
        "uniform price is the only bid"
    );

    // The provider's endpoint on its lease, the client's gateway on it.
    let server = serve_model_on_leases(
        &receipts,
        &node,
        &provider_addr,
        &dir.path().join("serve.log"),
    )?;
    let upstream = format!("{},lease={}", server.url, lease.id);
    let gateway = gateway_logged(
        &[upstream],
        &[
            "--node",
            &node,
            "--home",
            &home_s,
            "--key",
            "client",
            "--receipts",
            &dir.path().join("client-receipts").to_string_lossy(),
            "--ack-every",
            "2",
            "--ack-after-ms",
            "500",
        ],
        Some(&dir.path().join("gateway.log")),
    )?;

    // Three answers: greedy, seeded, and a plain text completion.
    let http = reqwest::Client::new();
    let mut told = 0u64;
    for (path, body) in [
        (
            "/v1/chat/completions",
            json!({"model": "smollm2", "max_tokens": 6, "temperature": 0,
                   "messages": [{"role": "user", "content": "Name a colour."}]}),
        ),
        (
            "/v1/chat/completions",
            json!({"model": "smollm2", "max_tokens": 6, "seed": 7,
                   "messages": [{"role": "user", "content": "Count to three."}]}),
        ),
        (
            "/v1/completions",
            json!({"model": "smollm2", "max_tokens": 5, "temperature": 0,
                   "prompt": "The sky is"}),
        ),
    ] {
        let bytes = http
            .post(format!("{}{path}", gateway.url))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await?
            .error_for_status()?
            .bytes()
            .await?;
        let answer: Value = serde_json::from_slice(&bytes)?;
        told += answer["usage"]["total_tokens"]
            .as_u64()
            .context("usage in the answer")?;
    }

    // Acknowledged, claimed, audited, revealed, judged honest and paid.
    let mut paid = None;
    for _ in 0..960 {
        let state = chain
            .snapshot(gpuchain_serving::state_key::module_prefix())
            .await?;
        let l = state.serving_lease(lease.id).context("the lease")?;
        let open = state
            .serving_claims()
            .iter()
            .any(|c| c.lease_id == lease.id);
        if l.next_seq == 3 && !open {
            paid = Some(l);
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let paid = paid.context("not every answer was claimed and settled within 4 minutes")?;
    ensure!(
        paid.units == u128::from(told),
        "the provider claimed {} units, the client was told {told}",
        paid.units
    );
    let most = paid.units * u128::from(PRICE) / 1_000_000;
    ensure!(
        paid.paid <= most && paid.paid + 2 >= most,
        "paid {} for {} units at {PRICE} per million",
        paid.paid,
        paid.units
    );
    let slashes = gpuchain_tests::slash_records(&node)?;
    ensure!(slashes.is_empty(), "nobody is slashed: {slashes:?}");
    let verifier = chain
        .get::<gpuchain_verify::Verifier>(&gpuchain_verify::state_key::verifier(
            &key_address(&home_s, "verifier")?.parse()?,
        ))
        .await?
        .context("verifier record")?;
    ensure!(
        verifier.verdicts >= 1,
        "the verifier judged the audited claims"
    );

    // The client ends the order; after the grace the rest of the deposit is back.
    let out = cli(&[
        "tx",
        "serving",
        "end",
        "client",
        &lease.order_id.to_string(),
        "--home",
        &home_s,
        "--node",
        &node,
        "--output",
        "json",
    ])?;
    ensure!(
        out.status.success(),
        "end: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut closed = None;
    for _ in 0..240 {
        let order = chain
            .get::<ServingOrder>(&gpuchain_serving::state_key::order(lease.order_id))
            .await?
            .context("the order")?;
        if order.state == ServingOrderState::Closed {
            closed = Some(order);
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let order = closed.context("the order did not close after its grace")?;
    ensure!(order.deposit == 0);
    let escrow = chain
        .balance(&gpuchain_serving::module_account::serving_escrow())
        .await?;
    ensure!(
        escrow == 0,
        "serving escrow holds {escrow} after the order closed"
    );
    drop(gateway);
    drop(server);
    Ok(())
}

fn append(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    let mut all = std::fs::read_to_string(path)?;
    all.push('\n');
    all.push_str(text);
    std::fs::write(path, all)?;
    Ok(())
}

fn key_address(home: &str, name: &str) -> anyhow::Result<String> {
    let out = cli(&["keys", "show", name, "--home", home, "--output", "json"])?;
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout)?;
    Ok(v["address"].as_str().context("address")?.to_string())
}
