//! Payment waits for a fetch, tried on a localnet with the real agents: two providers each
//! win a lone digits order whose client never confirms a receipt and is never audited. The
//! honest one serves its output; the other computes, reveals the right hash and serves
//! nothing. When their leases fall due the verifier fetches each output before payment: the
//! honest provider is paid less the 1% availability fee, the withholder is faulted and
//! slashed like a wrong result and its client refunded.

use gpuchain_auction::LeaseState;
use gpuchain_client::keys::Keystore;
use gpuchain_tests::{disputes_only, slash_records, Market, TestNet};

const GPU: u128 = 1_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_serves_nothing_is_never_paid() -> anyhow::Result<()> {
    let accounts = [
        ("client", 10_000 * GPU),
        ("honest", 2_000 * GPU),
        ("withholder", 2_000 * GPU),
        ("v1", 2_000 * GPU),
    ];
    let net = TestNet::start_with(1, &accounts, disputes_only).await?;
    let keys = Keystore::open(&net.net.keys_dir)?;
    let chain = net.client(0)?;
    let market = Market::new(&net)?;
    let verifier = market.verifier("v1")?;
    let agents = [
        market.provider("honest", "r-honest", &[])?,
        market.provider("withholder", "r-withhold", &["--dishonest", "withhold"])?,
    ];
    let logs = || {
        let mut text = verifier.log_text();
        for a in &agents {
            text.push_str(&a.log_text());
        }
        text
    };
    let client = keys.show("client")?.address;
    let honest_order = market.post_digits_order("client", "r-honest", 1, 7).await?;
    let withheld_order = market
        .post_digits_order("client", "r-withhold", 1, 8)
        .await?;
    let client_before = chain.balance(&client).await?;

    let paid = market.settled(honest_order, 1, 240, logs).await?;
    let lease = &paid[0];
    assert_eq!(lease.state, LeaseState::Paid, "{lease:?}\n{}", logs());
    assert!(lease.fetched, "paid only after the verifier fetched it");
    assert_eq!(
        lease.verification_charge,
        lease.price / 100,
        "the availability fee, out of the price"
    );

    let faulted = market.settled(withheld_order, 1, 240, logs).await?;
    let lease = &faulted[0];
    assert_eq!(lease.state, LeaseState::Faulted, "{lease:?}\n{}", logs());
    let withholder = keys.show("withholder")?.address.to_string();
    let records: Vec<_> = slash_records(&net.net.nodes[0].rpc_url)?
        .into_iter()
        .filter(|r| r["subject"] == withholder.as_str())
        .collect();
    assert_eq!(records.len(), 1, "slashed once: {records:?}");
    assert_eq!(
        records[0]["prover"],
        keys.show("v1")?.address.to_string().as_str()
    );
    assert!(
        chain.balance(&client).await? > client_before + lease.price,
        "the client got the withheld replica back and its share of the slash"
    );
    let status = verifier.status()?;
    let cases = status["cases"].as_array().cloned().unwrap_or_default();
    assert_eq!(cases.len(), 2, "{status:#}");
    assert!(
        cases.iter().all(|c| c["backend"] == "none (availability)"),
        "fetched, never re-run: {status:#}"
    );
    Ok(())
}
