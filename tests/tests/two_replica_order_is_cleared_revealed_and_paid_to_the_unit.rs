//! The market on a real localnet, every step through the CLI: three providers register and
//! bid on a 2-replica order, the chain clears it at the third price, both winners commit and
//! reveal the same result hash, and after the challenge window each is paid the clearing
//! price minus its verification charge and the take rate; the loser gets nothing and the client's excess comes back —
//! every balance checked to the unit, fees included.

use std::time::Duration;

use gpuchain_tests::{event_attr, tx_fee, unfetched_digits_order, NodeCli, TestNet};

const GPU: u128 = 1_000_000;

fn fee(outcome: &serde_json::Value) -> u128 {
    tx_fee(outcome).unwrap()
}

fn attr(outcome: &serde_json::Value, kind: &str, key: &str) -> String {
    event_attr(outcome, kind, key).unwrap_or_else(|| panic!("no {kind}.{key} in {outcome}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replica_order_is_cleared_revealed_and_paid_to_the_unit() -> anyhow::Result<()> {
    let accounts = [
        ("client", 10_000 * GPU),
        ("p1", 2_000 * GPU),
        ("p2", 2_000 * GPU),
        ("p3", 2_000 * GPU),
    ];
    let net = TestNet::start_with(1, &accounts, |spec| {
        let p = &mut spec.genesis.auction.params;
        p.reveal_window_blocks = 3;
        p.challenge_window_blocks = 4;
        p.verdict_window_blocks = 6;
        // No verifier runs here: an audit falls back at the end of the verdict window.
        spec.genesis.verify.params.max_verdict_wait_blocks = 0;
    })
    .await?;
    let client = net.client(0)?;
    let cli = NodeCli::new(&net, 0)?;
    let dir = tempfile::tempdir()?;
    let attrs = gpuchain_tests::cpu_provider_attrs(dir.path(), "local")?;
    let mut fees = std::collections::BTreeMap::new();
    let mut add_fee = |who: &str, outcome: &serde_json::Value| {
        *fees.entry(who.to_string()).or_insert(0u128) += fee(outcome)
    };
    for p in ["p1", "p2", "p3"] {
        let o = cli.tx(&[
            "provider",
            "register",
            p,
            "--attrs",
            attrs.to_str().unwrap(),
            "--bond",
            &(1_000 * GPU).to_string(),
        ])?;
        add_fee(p, &o);
    }

    let order = unfetched_digits_order(2, None, 20, 30);
    let order_file = dir.path().join("order.json");
    std::fs::write(&order_file, serde_json::to_vec(&order)?)?;
    let posted = cli.tx(&[
        "auction",
        "post-order",
        "client",
        "--order",
        order_file.to_str().unwrap(),
    ])?;
    add_fee("client", &posted);
    let order_id = attr(&posted, "auction.order_posted", "order_id");

    for (p, price) in [("p1", "600000"), ("p2", "700000"), ("p3", "800000")] {
        let o = cli.tx(&["auction", "bid", p, &order_id, price])?;
        add_fee(p, &o);
    }

    // Wait for clearing: two leases.
    let mut leases = serde_json::Value::Null;
    for _ in 0..60 {
        leases = cli.query(&["auction", "leases"])?;
        if leases.as_array().map_or(0, Vec::len) == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let leases = leases.as_array().cloned().unwrap_or_default();
    assert_eq!(leases.len(), 2, "two leases after clearing");
    let result_hash = hex::encode(blake3::hash(b"the digits output").as_bytes());
    let p1_addr = net.net.account("p1")?.to_string();
    let mut names = Vec::new();
    for lease in &leases {
        let name = if lease["provider"] == p1_addr.as_str() {
            "p1"
        } else {
            "p2"
        };
        names.push((name, lease["id"].to_string()));
    }
    // Both commit, then both reveal.
    for step in ["commit", "reveal"] {
        for (i, (name, lease_id)) in names.iter().enumerate() {
            let salt = hex::encode([i as u8 + 1; 32]);
            let o = cli.tx(&[
                "auction",
                step,
                name,
                lease_id,
                "--result-hash",
                &result_hash,
                "--salt",
                &salt,
            ])?;
            add_fee(name, &o);
        }
    }
    // The client got both outputs (one hash) and says so: paid without an availability
    // check.
    for (_, lease_id) in &names {
        let o = cli.tx(&["auction", "confirm-receipt", "client", lease_id])?;
        add_fee("client", &o);
    }

    // Paid after the challenge window (or, if the agreeing replicas were drawn for an audit,
    // after the audit's fallback: this net has no verifier). Each lease pays its verification
    // charge first: a new provider (score 0.5) is drawn 18% of the time, and agreeing
    // replicas are audited together, by one re-run, when either is drawn (32.76%): 262,080
    // of one 800,000 audit fee, half each (131,040); then 10% take of the remaining 668,960.
    // The two leases may be paid in different blocks (each once its output was fetched), so
    // wait for both.
    let (p1, p2) = (net.net.account("p1")?, net.net.account("p2")?);
    let expected_winner = |name: &str| 2_000 * GPU - 1_000 * GPU - fees[name] + 602_064;
    let mut paid = false;
    for _ in 0..200 {
        if client.balance(&p1).await? == expected_winner("p1")
            && client.balance(&p2).await? == expected_winner("p2")
        {
            paid = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(
        paid,
        "each winner paid 800,000 - 131,040 charge - 10% take; balances p1 {} (want {}), \
         p2 {} (want {})",
        client.balance(&p1).await?,
        expected_winner("p1"),
        client.balance(&p2).await?,
        expected_winner("p2")
    );
    assert_eq!(
        client.balance(&net.net.account("p3")?).await?,
        1_000 * GPU - fees["p3"],
        "the loser gets nothing"
    );
    let verification_fee = 2 * GPU * 20_000 / 1_000_000;
    assert_eq!(
        client.balance(&net.net.account("client")?).await?,
        10_000 * GPU - fees["client"] - 2 * 800_000 - verification_fee,
        "client paid two replicas at the clearing price plus the verification fee; the rest came back"
    );
    Ok(())
}
