//! Collusion on a 2-replica order: two providers of one owner win both replicas and reveal
//! the same wrong result (both run the same perturbed model, so their hashes agree). Agreement
//! no longer buys a pass: the chain samples agreeing replicas like lone ones, one re-run by a
//! real verifier agent judges the shared result, and both providers are faulted and slashed;
//! the client gets both replicas back and its share of both slashes.

use gpuchain_auction::LeaseState;
use gpuchain_client::keys::Keystore;
use gpuchain_tests::{
    audit_every_result, short_reveal_and_challenge, slash_records, slashes_of, verdict_windows,
    Market, NodeCli, TestNet,
};

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
        short_reveal_and_challenge(spec);
        // Every result is sampled, so the test does not wait on the lottery; the sampling of
        // agreeing replicas is what is under test.
        audit_every_result(spec);
        verdict_windows(spec, 400, 200);
    })
    .await?;
    let cli = NodeCli::new(&net, 0)?;
    let keys = Keystore::open(&net.net.keys_dir)?;
    let market = Market::new(&net)?;
    let verifier = market.verifier("v1")?;
    let _colluders = [
        market.provider("c1", "r-collude", &["--dishonest", "wrong-model"])?,
        market.provider("c2", "r-collude", &["--dishonest", "wrong-model"])?,
    ];
    let order_id = market
        .post_digits_order("client", "r-collude", 2, 11)
        .await?;
    let leases = market
        .settled(order_id, 2, 240, || verifier.log_text())
        .await?;

    assert_eq!(
        leases[0].result_hash, leases[1].result_hash,
        "the colluders agreed: {leases:?}"
    );
    for lease in &leases {
        assert_eq!(lease.state, LeaseState::Faulted, "{lease:?}");
    }
    let cases = cli.query(&["verify", "cases"])?;
    let ours = cases
        .as_array()
        .map(|c| {
            c.iter()
                .filter(|c| leases.iter().any(|l| c["lease_id"].as_u64() == Some(l.id)))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(ours, 1, "one re-run judged both replicas: {cases}");
    let records = slash_records(cli.node())?;
    for name in ["c1", "c2"] {
        let address = keys.show(name)?.address.to_string();
        let slash = *slashes_of(&records, &address)
            .first()
            .unwrap_or_else(|| panic!("{name} not slashed: {records:?}"));
        let reason = slash["reason"].to_string().to_lowercase();
        assert!(reason.contains("wrong"), "{slash}");
    }
    // The client paid two replicas, the fee and the reserve; it got both replicas and the
    // reserve back, and half of each slash after the audit fee came out of the first.
    let client = keys.show("client")?.address;
    let balance = net.client(0)?.balance(&client).await?;
    assert!(
        balance > 10_000 * GPU,
        "client balance {balance}: refunds plus slash shares exceed what it paid"
    );
    Ok(())
}
