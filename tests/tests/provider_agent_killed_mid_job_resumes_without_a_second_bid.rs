//! A provider agent is killed with SIGKILL while it runs a job it won (a test-only delay
//! holds the job in flight), then restarted from the same config and state. It sends no
//! second bid (one bid transaction on chain), resumes the job, commits, reveals and is
//! paid; its bond is intact and its balance is exactly start − bond − fees + payment.

use anyhow::Context;
use gpuchain_auction::{
    AuctionMsg, ClassRequirement, MsgPostOrder, OrderPostedEvent, Requirements, TooFewBids,
};
use gpuchain_client::keys::Keystore;
use gpuchain_jobspec::{InferenceSpec, JobSpec, ModelArch};
use gpuchain_tests::{
    blob, receive, register_provider, wait_for, AgentSpec, BlobHost, ProviderAgent, TestNet,
};
use gpuchain_tx::Msg;
use tendermint_rpc::query::Query;
use tendermint_rpc::{Client, Order};

const GPU: u128 = 1_000_000;

fn digits_input(n: u32) -> Vec<u8> {
    let mut out = b"GCT1".to_vec();
    out.extend_from_slice(&[1, 2, 0, 0]);
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&64u32.to_le_bytes());
    for i in 0..n * 64 {
        out.extend_from_slice(&(((i * 5) % 17) as f32).to_le_bytes());
    }
    out
}

/// Transactions signed by `address` whose message is `action`, and the sum of the fees
/// of all its transactions.
async fn txs_of(
    chain: &gpuchain_client::ChainClient,
    address: &str,
    action: &str,
) -> anyhow::Result<(usize, u128)> {
    let all = chain
        .rpc()
        .tx_search(
            Query::eq("message.sender", address),
            false,
            1,
            100,
            Order::Ascending,
        )
        .await?;
    let mut fees = 0u128;
    let mut count = 0;
    for tx in &all.txs {
        for e in &tx.tx_result.events {
            let attr = |k: &str| {
                e.attributes
                    .iter()
                    .find(|a| a.key_str().ok() == Some(k))
                    .and_then(|a| a.value_str().ok().map(str::to_string))
            };
            if e.kind == "tx" {
                fees += attr("fee").unwrap_or_default().parse::<u128>().unwrap_or(0);
            }
            if e.kind == "message" && attr("action").as_deref() == Some(action) {
                count += 1;
            }
        }
    }
    Ok((count, fees))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_agent_killed_mid_job_resumes_without_a_second_bid() -> anyhow::Result<()> {
    let accounts = [("client", 10_000 * GPU), ("p1", 2_000 * GPU)];
    let net = TestNet::start_with(1, &accounts, |spec| {
        let p = &mut spec.genesis.auction.params;
        p.reveal_window_blocks = 5;
        p.challenge_window_blocks = 3;
        p.verdict_window_blocks = 6;
        p.audit_min_ppm = 0;
        p.audit_max_ppm = 0;
        p.audit_deterrence_ppm = 0;
    })
    .await?;
    let chain = net.client(0)?;
    let dir = tempfile::tempdir()?;
    let spec = AgentSpec {
        max_jobs: 1,
        ..AgentSpec::digits(&net, "p1", dir.path())
    };
    let config = spec.write_config()?;
    register_provider(&config)?;
    let mut agent = ProviderAgent::spawn(&config, &["--exec-delay-ms", "6000"])?;
    wait_for("agent start", 60, || {
        agent
            .log_text()
            .contains("provider agent starting")
            .then_some(())
    })
    .await;

    let host = BlobHost::start()?;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let weights = std::fs::read(root.join("data/models/digits-mlp.safetensors"))?;
    let input = digits_input(16);
    let order = MsgPostOrder {
        job: JobSpec::Inference(InferenceSpec {
            arch: ModelArch::DigitsMlp,
            weights: blob(&weights, host.put("w", weights.clone())),
            tokenizer: None,
            input: blob(&input, host.put("x", input.clone())),
            batch_size: 64,
            llama: None,
            generation: None,
            tolerance: None,
        }),
        requirements: Requirements {
            class: ClassRequirement::Cpu,
            gpu_model: None,
            min_vram_mib: 0,
            min_gpu_count: 0,
            min_cuda_version: 0,
            region: None,
        },
        replicas: 1,
        max_price_per_replica: GPU,
        bid_window_blocks: 20,
        exec_deadline_blocks: 60,
        on_too_few_bids: TooFewBids::Refund,
    };
    let key = Keystore::open(&net.net.keys_dir)?.signing_key("client", None)?;
    let order_id: u64 = chain
        .submit(&key, vec![Msg::Auction(AuctionMsg::PostOrder(order))], "")
        .await?
        .ok()?
        .event::<OrderPostedEvent>()
        .context("the transaction posted no order")?
        .order_id;

    // Mid-job: the lease is won and the job started, not finished.
    wait_for("the job to be in flight", 120, || {
        agent
            .log_text()
            .contains("test delay before execution")
            .then_some(())
    })
    .await;
    let s = agent.status()?;
    assert_eq!(s["leases"][0]["stage"], "won", "{s}");
    agent.kill();

    let mut agent = ProviderAgent::spawn(&config, &[])?;
    receive(&chain, &key, order_id, 1, 120).await?;
    let status = wait_for("the restarted agent to be paid", 120, || {
        let s = agent.status().ok()?;
        (s["leases"][0]["stage"] == "paid").then_some(s)
    })
    .await;
    let lease = &status["leases"][0];
    assert!(
        lease["attempts"].as_u64().unwrap() >= 2,
        "the job was resumed: {lease}"
    );
    assert!(agent.log_text().contains("resuming job after a restart"));

    let p1 = net.net.account("p1")?;
    let (bids, fees) = txs_of(&chain, &p1.to_string(), "auction.bid").await?;
    assert_eq!(bids, 1, "one bid transaction, none after the restart");
    let paid = lease["paid"].as_u64().unwrap() as u128;
    assert!(paid > 0);
    let provider: gpuchain_staking::Provider = chain
        .get(&gpuchain_staking::state_key::provider(&p1))
        .await?
        .expect("registered");
    assert_eq!(provider.bonded, 1_000 * GPU, "no slash");
    assert_eq!(
        chain.balance(&p1).await?,
        2_000 * GPU - 1_000 * GPU - fees + paid,
        "no funds lost: start − bond − fees + payment"
    );
    assert!(agent.terminate()?);
    Ok(())
}
