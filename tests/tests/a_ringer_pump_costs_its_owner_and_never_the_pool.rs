//! The ringer pump, tried on a localnet through the CLI: one owner holds a verifier, an
//! ordinary posting account and a provider. The verifier commits a challenge, the poster
//! posts the ringer order, the owner's provider (the only bidder) reveals the committed hash
//! without computing anything, the poster confirms its receipt and the verifier reveals:
//! the challenge passes. Before the redesign the verification pool reimbursed such a
//! ringer (+88 GPU to the owner, −94 GPU to the pool per cycle). Now nothing is reimbursed:
//! the owner ends poorer and the pool richer, by the order's verification fee.

use gpuchain_tests::{event_attr, no_audits, unfetched_digits_order, NodeCli, TestNet};

const GPU: u128 = 1_000_000;
const OWNED: [&str; 3] = ["v", "poster", "p"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ringer_pump_costs_its_owner_and_never_the_pool() -> anyhow::Result<()> {
    let accounts = [
        ("v", 3_000 * GPU),
        ("poster", 1_000 * GPU),
        ("p", 2_000 * GPU),
    ];
    let net = TestNet::start_with(1, &accounts, |spec| {
        no_audits(spec);
        let p = &mut spec.genesis.auction.params;
        p.reveal_window_blocks = 4;
        p.challenge_window_blocks = 15;
    })
    .await?;
    let cli = NodeCli::new(&net, 0)?;
    let chain = net.client(0)?;
    let dir = tempfile::tempdir()?;
    let attrs = gpuchain_tests::cpu_provider_attrs(dir.path(), "r-pump")?;
    let bond = (1_000 * GPU).to_string();
    let attrs = attrs.to_str().unwrap_or_default();
    cli.tx(&[
        "provider", "register", "p", "--attrs", attrs, "--bond", &bond,
    ])?;
    cli.tx(&["verify", "register", "v", &bond])?;

    let pool = gpuchain_auction::module_account::verification_pool();
    let (owner_before, pool_before) = (
        net.total_balance(&OWNED).await?,
        chain.balance(&pool).await?,
    );

    // The committed answer is whatever the owner's provider will reveal: no work at all.
    let made_up = hex::encode(blake3::hash(b"nothing was computed").as_bytes());
    let salt = hex::encode([9u8; 32]);
    let poster = net.net.account("poster")?.to_string();
    let committed = cli.tx(&[
        "verify",
        "commit-challenge",
        "v",
        "--poster",
        &poster,
        "--expected-output-hash",
        &made_up,
        "--salt",
        &salt,
    ])?;
    let challenge_id =
        event_attr(&committed, "verify.challenge_committed", "challenge_id").unwrap_or_default();
    // The bid window leaves room for a CLI start and a block or two on a busy machine.
    let order_file = dir.path().join("order.json");
    std::fs::write(
        &order_file,
        serde_json::to_vec(&unfetched_digits_order(1, Some("r-pump"), 10, 24))?,
    )?;
    let order_path = order_file.to_str().unwrap_or_default();
    let posted = cli.tx(&["auction", "post-order", "poster", "--order", order_path])?;
    let order_id = event_attr(&posted, "auction.order_posted", "order_id").unwrap_or_default();
    cli.tx(&["auction", "bid", "p", &order_id, "900000"])?;

    let mut lease_id = String::new();
    for _ in 0..100 {
        let leases = cli.query(&["auction", "leases"])?;
        if let Some(l) = leases.as_array().and_then(|a| a.first()) {
            lease_id = l["id"].to_string();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    assert!(!lease_id.is_empty(), "the ringer cleared");
    let result = ["--result-hash", made_up.as_str(), "--salt", salt.as_str()];
    let commit: Vec<&str> = [&["auction", "commit", "p", &lease_id][..], &result].concat();
    cli.tx(&commit)?;
    let reveal: Vec<&str> = [&["auction", "reveal", "p", &lease_id][..], &result].concat();
    cli.tx(&reveal)?;
    cli.tx(&["auction", "confirm-receipt", "poster", &lease_id])?;
    let revealed = cli.tx(&[
        "verify",
        "reveal-challenge",
        "v",
        &challenge_id,
        &order_id,
        "--expected-output-hash",
        &made_up,
        "--salt",
        &salt,
    ])?;
    assert_eq!(
        event_attr(&revealed, "verify.challenge_revealed", "passed").as_deref(),
        Some("1"),
        "the made-up answer 'passes' its own ringer"
    );

    let mut state = String::new();
    for _ in 0..200 {
        let lease = cli.query(&["auction", "lease", &lease_id])?;
        state = lease["lease"]["state"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if state == "paid" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    assert_eq!(state, "paid");
    let (owner_after, pool_after) = (
        net.total_balance(&OWNED).await?,
        chain.balance(&pool).await?,
    );
    assert!(
        owner_after < owner_before,
        "the pump costs its owner: {owner_before} -> {owner_after}"
    );
    assert!(
        pool_after >= pool_before + GPU * 20_000 / 1_000_000,
        "the pool gained at least the order's verification fee: {pool_before} -> {pool_after}"
    );
    Ok(())
}
