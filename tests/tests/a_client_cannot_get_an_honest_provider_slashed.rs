//! The tolerance trap, tried by a client on a localnet with the real agents. The client
//! first asks for a zero tolerance (so that an honest provider 1 ppm off would be faulted):
//! the chain refuses it. It then posts an ordinary 2-replica order and takes the other
//! replica with its own provider, which computes on the canonical path and says the honest
//! CPU provider's output is inconsistent. The order is disputed, the verifier re-runs both
//! replicas on the canonical path under the job's tolerance and finds both honest: the
//! honest provider is paid and never slashed, and the client and its sybil together end
//! with less than they started with (they paid for the dispute).

use gpuchain_auction::LeaseState;
use gpuchain_client::keys::Keystore;
use gpuchain_jobspec::{JobSpec, Tolerance};
use gpuchain_tests::{disputes_only, slash_records, Market, TestNet};

const GPU: u128 = 1_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_cannot_get_an_honest_provider_slashed() -> anyhow::Result<()> {
    let accounts = [
        ("client", 10_000 * GPU),
        ("sybil", 2_000 * GPU),
        ("honest", 2_000 * GPU),
        ("v1", 3_000 * GPU),
    ];
    let net = TestNet::start_with(1, &accounts, disputes_only).await?;
    let node = net.net.nodes[0].rpc_url.clone();
    let keys = Keystore::open(&net.net.keys_dir)?;
    let chain = net.client(0)?;
    let address = |name: &str| keys.show(name).map(|k| k.address);
    let market = Market::new(&net)?;
    let verifier = market.verifier("v1")?;
    let agents = [
        market.provider_on("sybil", "r-trap", "canonical", &["--dishonest", "deny"])?,
        market.provider_on("honest", "r-trap", "cpu", &[])?,
    ];

    // A tolerance stricter than the calibrated cross-backend default is refused.
    let zero = Tolerance {
        rel_l2_ppm_max: 0,
        agreement_ppm_min: 1_000_000,
        cosine_ppm_min: 0,
    };
    let refused = market
        .post_digits_order_with("client", "r-trap", 2, 31, |order| {
            if let JobSpec::Inference(s) = &mut order.job {
                s.tolerance = Some(zero);
            }
        })
        .await;
    let why = format!("{:#}", refused.expect_err("a zero tolerance is refused"));
    assert!(why.contains("tolerance"), "{why}");

    let (attacker_before, honest_before) = (
        net.total_balance(&["client", "sybil"]).await?,
        chain.balance(&address("honest")?).await?,
    );
    let order_id = market.post_digits_order("client", "r-trap", 2, 32).await?;
    let leases = market
        .settled(order_id, 2, 300, || {
            let mut logs = verifier.log_text();
            for a in &agents {
                logs.push_str(&a.log_text());
            }
            logs
        })
        .await?;

    assert_ne!(
        leases[0].result_hash, leases[1].result_hash,
        "the canonical and CPU outputs differ in their bytes: {leases:?}"
    );
    for lease in &leases {
        assert_eq!(lease.state, LeaseState::Paid, "both were honest: {lease:?}");
    }
    let sybil_log = agents[0].log_text();
    assert!(
        sybil_log.contains(r#""consistent":false"#),
        "the sybil denied: {sybil_log}"
    );
    let honest = address("honest")?.to_string();
    assert!(
        slash_records(&node)?
            .iter()
            .all(|r| r["subject"] != honest.as_str()),
        "the honest provider is never slashed"
    );
    let honest_after = chain.balance(&address("honest")?).await?;
    assert!(
        honest_after > honest_before,
        "the honest provider is paid: {honest_before} -> {honest_after}"
    );
    let attacker_after = net.total_balance(&["client", "sybil"]).await?;
    assert!(
        attacker_after < attacker_before,
        "the attack costs its owner: {attacker_before} -> {attacker_after}"
    );
    println!(
        "FIGURES tolerance trap: attacker {} ugpu, honest provider +{} ugpu",
        i128::try_from(attacker_after).unwrap_or(0) - i128::try_from(attacker_before).unwrap_or(0),
        honest_after - honest_before
    );
    Ok(())
}
