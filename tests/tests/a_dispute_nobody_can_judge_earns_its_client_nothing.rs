//! "No verifier", tried by a client on a localnet with the real agents: the client posts a
//! 2-replica order while no verifier is registered and takes the other replica with its own
//! provider, which says the honest provider's output is inconsistent. The order is
//! disputed and nobody can judge it. Refunding both replicas would have given the client
//! the honest work for free; instead, once the wait for a verifier is over, both results are
//! accepted and paid, nobody is slashed, and the client and its sybil end poorer by at least
//! the honest provider's price. While the dispute is pending neither provider can unbond
//! the stake that answers for it.

use std::time::{Duration, Instant};

use gpuchain_auction::LeaseState;
use gpuchain_client::keys::Keystore;
use gpuchain_tests::{disputes_only, order_leases, slash_records, Market, NodeCli, TestNet};

const GPU: u128 = 1_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dispute_nobody_can_judge_earns_its_client_nothing() -> anyhow::Result<()> {
    let accounts = [
        ("client", 10_000 * GPU),
        ("sybil", 2_000 * GPU),
        ("honest", 2_000 * GPU),
    ];
    let net = TestNet::start_with(1, &accounts, |spec| {
        disputes_only(spec);
        spec.genesis.auction.params.verdict_window_blocks = 15;
        spec.genesis.verify.params.max_verdict_wait_blocks = 15;
    })
    .await?;
    let keys = Keystore::open(&net.net.keys_dir)?;
    let chain = net.client(0)?;
    let cli = NodeCli::new(&net, 0)?;
    let address = |name: &str| keys.show(name).map(|k| k.address);
    let market = Market::new(&net)?;
    let agents = [
        market.provider_on("sybil", "r-empty", "canonical", &["--dishonest", "deny"])?,
        market.provider_on("honest", "r-empty", "cpu", &[])?,
    ];
    let logs = || {
        let mut text = String::new();
        for a in &agents {
            text.push_str(&a.log_text());
        }
        text
    };
    let (attacker_before, honest_before) = (
        net.total_balance(&["client", "sybil"]).await?,
        chain.balance(&address("honest")?).await?,
    );
    let order_id = market.post_digits_order("client", "r-empty", 2, 51).await?;

    // Disputed, with no verifier to draw: the stake behind it stays put.
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let leases = order_leases(&chain, order_id).await?;
        if leases.len() == 2 && leases.iter().all(|l| l.state == LeaseState::Disputed) {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "not disputed: {leases:?}\n{}",
            logs()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    for who in ["honest", "sybil"] {
        let refused = cli.tx_outcome(&["provider", "unbond", who, "1000000"])?;
        assert_eq!(
            (refused["codespace"].as_str(), refused["code"].as_u64()),
            (Some("staking"), Some(23)),
            "{who} cannot unbond while its lease is disputed: {refused}"
        );
    }

    let leases = market.settled(order_id, 2, 300, logs).await?;
    for lease in &leases {
        assert_eq!(
            lease.state,
            LeaseState::Paid,
            "accepted after the wait, never refunded: {lease:?}"
        );
    }
    assert!(
        slash_records(cli.node())?.is_empty(),
        "nobody proved a fault"
    );
    let price = leases[0].price;
    assert!(
        chain.balance(&address("honest")?).await? > honest_before,
        "the honest provider is paid"
    );
    let attacker_after = net.total_balance(&["client", "sybil"]).await?;
    assert!(
        attacker_before >= attacker_after + price,
        "the client paid at least the honest replica: {attacker_before} -> {attacker_after}"
    );
    Ok(())
}
