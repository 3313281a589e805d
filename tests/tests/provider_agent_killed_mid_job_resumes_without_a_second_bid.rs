//! A provider agent is killed with SIGKILL while it runs a job it won (a test-only delay
//! holds the job in flight), then restarted from the same config and state. It sends no
//! second bid (one bid transaction on chain), resumes the job, commits, reveals and is
//! paid; its bond is intact and its balance is exactly start − bond − fees + payment.

use anyhow::Context;
use gpuchain_auction::{AuctionMsg, ClassRequirement, OrderPostedEvent};
use gpuchain_client::keys::Keystore;
use gpuchain_tests::{
    blob, digits_input, digits_job, digits_mlp_weights, open_order, providers_only, receive,
    wait_for, AgentSpec, BlobHost, ProviderAgent, TestNet,
};
use gpuchain_tx::Msg;
use tendermint_rpc::query::Query;
use tendermint_rpc::{Client, Order};

const GPU: u128 = 1_000_000;

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
    let net = TestNet::start_with(1, &accounts, providers_only).await?;
    let chain = net.client(0)?;
    let dir = tempfile::tempdir()?;
    let spec = AgentSpec {
        max_jobs: 1,
        ..AgentSpec::digits(&net, "p1", dir.path())
    };
    let mut agent = spec.start(&["--exec-delay-ms", "6000"])?;
    let config = agent.config.clone();
    wait_for("agent start", 60, || agent.started().then_some(())).await;

    let host = BlobHost::start()?;
    let weights = digits_mlp_weights()?;
    let input = digits_input(16, 0);
    let job = digits_job(
        blob(&weights, host.put("w", weights.clone())),
        blob(&input, host.put("x", input.clone())),
    );
    let mut order = open_order(job, 1, GPU);
    order.requirements.class = ClassRequirement::Cpu;
    order.bid_window_blocks = 20;
    order.exec_deadline_blocks = 60;
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
