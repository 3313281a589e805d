//! Two `gpuchain-provider` agents on a real localnet, each registered by its own CLI and run
//! as a daemon from a config file. Three bad orders come first — an architecture the agents
//! do not run, requirements beyond a CPU machine, an input whose bytes do not match its
//! hash — and are skipped with a logged reason while the agents keep running. Then both bid
//! on a digits-MLP inference order at different prices: the cheaper wins, fetches and runs
//! the job on the CPU backend, serves the output by hash, commits, reveals and is paid the
//! clearing price minus the take; the other's reserved capacity is released. Prints the
//! auction / fetch / execute / commit-reveal split for docs/benchmarks.md.

use std::time::Instant;

use anyhow::Context;
use gpuchain_auction::{AuctionMsg, ClassRequirement, MsgPostOrder, OrderPostedEvent};
use gpuchain_client::keys::Keystore;
use gpuchain_jobspec::{BlobRef, ModelArch};
use gpuchain_tests::{
    blob, digits_input, digits_job_of, digits_mlp_weights, open_order, providers_only, receive,
    wait_for, AgentSpec, BlobHost, ProviderAgent, TestNet,
};
use gpuchain_tx::Msg;

const GPU: u128 = 1_000_000;

/// A one-replica digits order of `arch` for machines of `class`, at up to 1 GPU.
fn order(
    arch: ModelArch,
    weights: BlobRef,
    input: BlobRef,
    class: ClassRequirement,
) -> MsgPostOrder {
    let mut order = open_order(digits_job_of(arch, weights, input), 1, GPU);
    order.requirements.class = class;
    order.bid_window_blocks = 20;
    order.exec_deadline_blocks = 30;
    order
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_agents_bid_and_the_cheaper_is_paid() -> anyhow::Result<()> {
    let accounts = [
        ("client", 10_000 * GPU),
        ("p1", 2_000 * GPU),
        ("p2", 2_000 * GPU),
    ];
    let net = TestNet::start_with(1, &accounts, providers_only).await?;
    let chain = net.client(0)?;
    let dir = tempfile::tempdir()?;
    let specs = [("p1", 100_000u128), ("p2", 200_000)].map(|(name, price)| AgentSpec {
        cpu_price: price,
        max_jobs: 1,
        ..AgentSpec::digits(&net, name, dir.path())
    });
    let mut agents = Vec::new();
    for spec in &specs {
        agents.push(spec.start(&[])?);
    }
    // Let both agents start following.
    let started = Instant::now();
    wait_for("agents to start", 60, || {
        agents.iter().all(ProviderAgent::started).then_some(())
    })
    .await;
    assert!(
        agents[0].log_text().contains("\"backend\":\"cpu\""),
        "no NVIDIA driver here: CPU backend"
    );

    let host = BlobHost::start()?;
    let weights = digits_mlp_weights()?;
    let input = digits_input(32, 0);
    let w = blob(&weights, host.put("w", weights.clone()));
    let x = blob(&input, host.put("x", input.clone()));
    let mut tampered = input.clone();
    tampered[100] ^= 1;
    let bad_x = blob(&input, host.put("bad", tampered));
    let key = Keystore::open(&net.net.keys_dir)?.signing_key("client", None)?;
    let post = |o: MsgPostOrder| {
        let chain = chain.clone();
        let key = key.clone();
        async move {
            let out = chain
                .submit(&key, vec![Msg::Auction(AuctionMsg::PostOrder(o))], "")
                .await?
                .ok()?;
            let id = out
                .event::<OrderPostedEvent>()
                .context("the transaction posted no order")?
                .order_id;
            anyhow::Ok((id, out.height))
        }
    };
    let (cnn, _) = post(order(
        ModelArch::DigitsCnn,
        w.clone(),
        x.clone(),
        ClassRequirement::Any,
    ))
    .await?;
    let (gpu, _) = post(order(
        ModelArch::DigitsMlp,
        w.clone(),
        x.clone(),
        ClassRequirement::Gpu,
    ))
    .await?;
    let (bad, _) = post(order(
        ModelArch::DigitsMlp,
        w.clone(),
        bad_x,
        ClassRequirement::Cpu,
    ))
    .await?;
    let posted_at = Instant::now();
    let (good, posted_height) =
        post(order(ModelArch::DigitsMlp, w, x, ClassRequirement::Cpu)).await?;

    // The client fetches its result and confirms the receipt; the cheaper agent wins and
    // is paid.
    let outputs = receive(&chain, &key, good, 1, 120).await?;
    assert!(outputs[0].starts_with(b"GCT1"), "a tensor of logits");
    let status = wait_for("p1 to be paid", 120, || {
        let s = agents[0].status().ok()?;
        (s["leases"][0]["stage"] == "paid").then_some(s)
    })
    .await;
    let paid_at = posted_at.elapsed();
    let lease = &status["leases"][0];
    assert_eq!(lease["order_id"], good);
    let price = lease["price"].as_u64().unwrap() as u128;
    // Second price: p2's bid (200,000 × 2 s × 1.1); p1 bid 220,000.
    assert_eq!(price, 440_000, "clearing price is the losing bid");
    assert_eq!(
        lease["paid"].as_u64().unwrap() as u128,
        price - price / 10,
        "paid minus the 10% take"
    );
    assert_eq!(status["counters"]["earnings"], lease["paid"]);
    assert_eq!(status["counters"]["wins"], 1);
    assert_eq!(status["slots_used"], 0);

    // The output is served by hash from the winner's blob server.
    let result_hash = lease["result_hash"].as_str().unwrap().to_string();
    let out = std::process::Command::new("curl")
        .args([
            "-sf",
            &format!("http://127.0.0.1:{}/blob/{result_hash}", specs[0].blob_port),
        ])
        .output()?;
    assert!(out.status.success(), "result served");
    assert_eq!(blake3::hash(&out.stdout).to_hex().to_string(), result_hash);
    assert_eq!(
        out.stdout.len(),
        8 + 8 + 32 * 10 * 4,
        "GCT1 f32 [32, 10] logits"
    );

    // The other agent lost and released its slot; both skipped the three bad orders.
    let s2 = wait_for("p2 to see the auction lost", 30, || {
        let s = agents[1].status().ok()?;
        (s["counters"]["losses"] == 1).then_some(s)
    })
    .await;
    assert_eq!(s2["slots_used"], 0, "reserved capacity released");
    assert_eq!(
        s2["bids"].as_array().unwrap().len(),
        1,
        "p2 bid only on the good order"
    );
    for (agent, s) in [(&agents[0], &status), (&agents[1], &s2)] {
        assert!(
            s["counters"]["orders_skipped"].as_u64().unwrap() >= 3,
            "{s}"
        );
        let log = agent.log_text();
        assert!(
            log.contains("is not one this agent runs"),
            "cnn order {cnn} skipped"
        );
        assert!(
            log.contains("beyond this machine"),
            "gpu order {gpu} skipped"
        );
        assert!(
            log.contains("blob hash mismatch"),
            "bad-blob order {bad} skipped"
        );
    }
    assert!(
        agents.iter_mut().all(|a| a.is_running()),
        "bad orders never crash an agent"
    );

    // Metrics over plain HTTP.
    let metrics = std::process::Command::new("curl")
        .args([
            "-sf",
            &format!("http://127.0.0.1:{}/metrics", specs[0].metrics_port),
        ])
        .output()?;
    let metrics = String::from_utf8_lossy(&metrics.stdout);
    assert!(
        metrics.contains("gpuchain_provider_wins_total 1"),
        "{metrics}"
    );
    assert!(metrics.contains(&format!(
        "gpuchain_provider_earnings_ugpu_total {}",
        price - price / 10
    )));

    // Figures: block times from the headers.
    let time_of = |h: u64| {
        let chain = chain.clone();
        async move {
            use tendermint_rpc::Client;
            let b = chain
                .rpc()
                .block(tendermint::block::Height::try_from(h)?)
                .await?;
            anyhow::Ok(b.block.header.time)
        }
    };
    let bid = &status["bids"][0];
    let lease_height = lease["created_height"].as_u64().unwrap();
    let h = |k: &str| lease[k].as_u64().unwrap();
    let t_posted = time_of(posted_height).await?;
    let t_lease = time_of(lease_height).await?;
    let t_commit = time_of(h("committed_height")).await?;
    let t_reveal = time_of(h("revealed_height")).await?;
    let secs = |a: tendermint::Time, b: tendermint::Time| {
        b.duration_since(a).map(|d| d.as_secs_f64()).unwrap_or(0.0)
    };
    println!(
        "FIGURES auction (posted→lease, {} blocks) {:.2} s; lease→commit {:.2} s; commit→reveal {:.2} s; posted→reveal {:.2} s",
        lease_height - posted_height,
        secs(t_posted, t_lease),
        secs(t_lease, t_commit),
        secs(t_commit, t_reveal),
        secs(t_posted, t_reveal)
    );
    println!(
        "FIGURES order posted at height {posted_height}; bid window end {}; lease at {lease_height}; \
         prefetch (fetch+verify) {:.3} s; execute {:.3} s; committed at {}; revealed at {}; paid at {}; \
         wall time posted→paid {:.1} s; agents up {:.1} s",
        bid["bid_end_height"], bid["prefetch_seconds"].as_f64().unwrap_or(0.0),
        lease["execute_seconds"].as_f64().unwrap_or(0.0), lease["committed_height"],
        lease["revealed_height"], lease["paid_height"], paid_at.as_secs_f64(), started.elapsed().as_secs_f64()
    );

    // Graceful shutdown on SIGTERM.
    for a in &mut agents {
        assert!(a.terminate()?, "agent exits cleanly on SIGTERM");
    }
    Ok(())
}
