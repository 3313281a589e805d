//! Honest replicas on different backends: a CPU agent and a canonical-path agent win a
//! 2-replica digits order. Their outputs differ in the last bits, so their result hashes
//! differ; each agent fetches the other's output, finds it within the job's tolerance and
//! says so, and the order settles as agreeing: both are paid, no verifier re-runs anything
//! (none is registered), and the client's dispute reserve comes back whole.

use gpuchain_auction::LeaseState;
use gpuchain_client::keys::Keystore;
use gpuchain_tests::{no_audits, short_reveal_and_challenge, Market, TestNet};

const GPU: u128 = 1_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honest_replicas_on_different_backends_are_paid_without_a_re_execution(
) -> anyhow::Result<()> {
    let accounts = [
        ("client", 10_000 * GPU),
        ("on-cpu", 2_000 * GPU),
        ("on-canonical", 2_000 * GPU),
    ];
    let net = TestNet::start_with(1, &accounts, |spec| {
        short_reveal_and_challenge(spec);
        // No audit draw: what is under test is that a bit-wise difference alone costs no
        // re-execution.
        no_audits(spec);
        let p = &mut spec.genesis.auction.params;
        p.compare_window_blocks = 60;
        p.verdict_window_blocks = 6;
        spec.genesis.verify.params.max_verdict_wait_blocks = 0;
    })
    .await?;
    let keys = Keystore::open(&net.net.keys_dir)?;
    let client = keys.show("client")?.address;
    let chain = net.client(0)?;
    let market = Market::new(&net)?;
    let agents = [
        market.provider_on("on-cpu", "r-mixed", "cpu", &[])?,
        market.provider_on("on-canonical", "r-mixed", "canonical", &[])?,
    ];
    let before = chain.balance(&client).await?;
    let order_id = market.post_digits_order("client", "r-mixed", 2, 21).await?;
    let leases = market
        .settled(order_id, 2, 240, || {
            agents
                .iter()
                .map(|a| a.log_text())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .await?;

    assert_ne!(
        leases[0].result_hash, leases[1].result_hash,
        "the CPU and canonical outputs differ in their bytes: {leases:?}"
    );
    for lease in &leases {
        assert_eq!(lease.state, LeaseState::Paid, "{lease:?}");
    }
    for agent in &agents {
        let log = agent.log_text();
        assert!(
            log.contains("replicas compared") && log.contains(r#""consistent":true"#),
            "each agent compared the other's output and found it within tolerance:\n{log}"
        );
    }
    // The client paid the two replicas and the verification fee; the reserve came back.
    let order = chain
        .get::<gpuchain_auction::Order>(&gpuchain_auction::state_key::order(order_id))
        .await?
        .expect("order");
    let price = order.clearing_price.expect("cleared");
    assert_eq!(order.dispute_reserve, 0);
    let spent = before - chain.balance(&client).await?;
    let tx_fees = spent - 2 * price - order.verification_fee;
    assert!(
        tx_fees < GPU / 10,
        "only the two replicas, the verification fee and the posting fee were spent: {spent}"
    );
    Ok(())
}
