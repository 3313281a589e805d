//! Commit-reveal rules on a real localnet, through the CLI: on a 3-replica order one provider
//! commits and reveals honestly, one commits something else and then reveals the honest
//! provider's hash (a copied reveal: rejected), and one does nothing until its deadline
//! (a late commit: rejected). The copier, which committed and then could not reveal after the
//! honest reveal, takes the wrong-result slash (it had seen the answer); the idle provider,
//! which never committed, the missed-deadline slash. The client is refunded their replicas
//! plus its share of the slashes, the honest
//! provider is paid, and `query auction watch` reports every transition until the order is
//! settled — balances checked to the unit.

use std::collections::BTreeMap;

use gpuchain_tests::{event_attr, tx_fee, unfetched_digits_order, NodeCli, TestNet};
use serde_json::Value;

const GPU: u128 = 1_000_000;
/// Seconds of block time a closed order stays in state here (the default is a day).
const RETENTION_SECS: u64 = 3;
const BOND: u128 = 1_000 * GPU;
const MISSED_SLASH_PPM: u32 = 50_000;
const WRONG_RESULT_SLASH_PPM: u32 = 300_000;
const CLIENT_SHARE_PPM: u32 = 500_000;
const TAKE_RATE_PPM: u128 = 100_000;
const FEE_PPM: u128 = 20_000;

fn code(outcome: &Value) -> (String, u64) {
    (
        outcome["codespace"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        outcome["code"].as_u64().unwrap_or_default(),
    )
}

/// An amount printed as a JSON number or string.
fn amount(v: &Value) -> u128 {
    v.as_u64()
        .map(u128::from)
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or(u128::MAX)
}

fn lease_of<'a>(leases: &'a [Value], provider: &str) -> &'a Value {
    leases
        .iter()
        .find(|l| l["provider"] == provider)
        .unwrap_or_else(|| panic!("no lease for {provider}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_reveal_rules_hold_on_a_localnet() -> anyhow::Result<()> {
    let accounts = [
        ("client", 10_000 * GPU),
        ("honest", 2_000 * GPU),
        ("copier", 2_000 * GPU),
        ("idle", 2_000 * GPU),
    ];
    let net = TestNet::start_with(1, &accounts, |spec| {
        let p = &mut spec.genesis.auction.params;
        // Wide enough that a CLI transaction sent after the deadline lands inside it on a busy
        // machine too.
        p.reveal_window_blocks = 15;
        p.challenge_window_blocks = 3;
        p.audit_min_ppm = 0;
        p.audit_max_ppm = 0;
        p.audit_deterrence_ppm = 0;
        p.retention_secs = RETENTION_SECS;
        let s = &mut spec.genesis.slashing.params;
        s.missed_deadline_slash_ppm = MISSED_SLASH_PPM;
        s.client_share_ppm = CLIENT_SHARE_PPM;
    })
    .await?;
    let cli = NodeCli::new(&net, 0)?;
    let chain = net.client(0)?;
    let dir = tempfile::tempdir()?;
    let attrs = gpuchain_tests::cpu_provider_attrs(dir.path(), "local")?;
    let mut fees: BTreeMap<&str, u128> = BTreeMap::new();
    let mut paid = |who: &'static str, outcome: &Value| -> anyhow::Result<()> {
        *fees.entry(who).or_default() += tx_fee(outcome)?;
        Ok(())
    };
    for p in ["honest", "copier", "idle"] {
        let bond = BOND.to_string();
        let attrs = attrs.to_str().unwrap_or_default();
        paid(
            p,
            &cli.tx(&["provider", "register", p, "--attrs", attrs, "--bond", &bond])?,
        )?;
    }
    let order_file = dir.path().join("order.json");
    std::fs::write(
        &order_file,
        serde_json::to_vec(&unfetched_digits_order(3, None, 15, 12))?,
    )?;
    let order_path = order_file.to_str().unwrap_or_default();
    let posted = cli.tx(&["auction", "post-order", "client", "--order", order_path])?;
    paid("client", &posted)?;
    let order_id = event_attr(&posted, "auction.order_posted", "order_id").unwrap_or_default();

    // `watch` runs beside the whole scenario and must end by itself when the order settles.
    let watch_args = [
        "query",
        "auction",
        "watch",
        &order_id,
        "--node",
        cli.node(),
        "--output",
        "json",
    ]
    .map(str::to_string);
    let watch = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = watch_args.iter().map(String::as_str).collect();
        gpuchain_tests::cli(&args)
    });

    for p in ["honest", "copier", "idle"] {
        paid(p, &cli.tx(&["auction", "bid", p, &order_id, "900000"])?)?;
    }
    let mut leases = Vec::new();
    for _ in 0..100 {
        leases = cli
            .query(&["auction", "leases"])?
            .as_array()
            .cloned()
            .unwrap_or_default();
        if leases.len() == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    assert_eq!(leases.len(), 3, "three leases after clearing");
    let id_of = |name: &str| -> anyhow::Result<String> {
        Ok(lease_of(&leases, &net.net.account(name)?.to_string())["id"].to_string())
    };
    let (honest, copier, idle) = (id_of("honest")?, id_of("copier")?, id_of("idle")?);
    let deadline = lease_of(&leases, &net.net.account("idle")?.to_string())["deadline_height"]
        .as_u64()
        .unwrap_or_default();

    let right = hex::encode(blake3::hash(b"the digits output").as_bytes());
    let other = hex::encode(blake3::hash(b"something else").as_bytes());
    let (salt_h, salt_c) = (hex::encode([1u8; 32]), hex::encode([2u8; 32]));
    let commit = |who, lease: &str, hash: &str, salt: &str| {
        cli.tx(&[
            "auction",
            "commit",
            who,
            lease,
            "--result-hash",
            hash,
            "--salt",
            salt,
        ])
    };
    paid("honest", &commit("honest", &honest, &right, &salt_h)?)?;
    paid("copier", &commit("copier", &copier, &other, &salt_c)?)?;

    chain
        .wait_for_height(deadline + 1, std::time::Duration::from_secs(120))
        .await?;
    let late = cli.tx_outcome(&[
        "auction",
        "commit",
        "idle",
        &idle,
        "--result-hash",
        &right,
        "--salt",
        &salt_h,
    ])?;
    assert_eq!(
        code(&late),
        ("auction".into(), 23),
        "a late commit fails: {late}"
    );

    let reveal = |who, lease: &str, hash: &str, salt: &str| {
        cli.tx_outcome(&[
            "auction",
            "reveal",
            who,
            lease,
            "--result-hash",
            hash,
            "--salt",
            salt,
        ])
    };
    let revealed = reveal("honest", &honest, &right, &salt_h)?;
    assert_eq!(code(&revealed).1, 0, "the honest reveal lands: {revealed}");
    paid("honest", &revealed)?;
    let copied = reveal("copier", &copier, &right, &salt_c)?;
    assert_eq!(
        code(&copied),
        ("auction".into(), 26),
        "a copied reveal fails: {copied}"
    );
    // The client fetched the honest output (after the copy attempt, which must land inside
    // the reveal window).
    let receipt = cli.tx_outcome(&["auction", "confirm-receipt", "client", &honest])?;
    assert_eq!(
        code(&receipt).1,
        0,
        "the client confirms its result: {receipt}"
    );
    paid("client", &receipt)?;

    let watched = watch.await??;
    assert!(
        watched.status.success(),
        "watch ends when the order settles: {}",
        String::from_utf8_lossy(&watched.stderr)
    );
    let transitions: Vec<Value> = String::from_utf8_lossy(&watched.stdout)
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let lease_states = |lease: &str| -> Vec<String> {
        transitions
            .iter()
            .filter(|t| t["event"] == "lease" && t["lease_id"].as_u64() == lease.parse().ok())
            .map(|t| t["state"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(
        lease_states(&honest).last().map(String::as_str),
        Some("paid")
    );
    assert_eq!(
        lease_states(&copier).last().map(String::as_str),
        Some("missed")
    );
    assert_eq!(
        lease_states(&idle).last().map(String::as_str),
        Some("missed")
    );
    assert_eq!(
        transitions.iter().filter(|t| t["event"] == "bid").count(),
        3,
        "watch saw the three bids: {transitions:?}"
    );
    assert_eq!(
        transitions.last().map(|t| t["state"].clone()),
        Some("settled".into())
    );

    // Slashes: the idle provider missed its deadline; the copier committed and walked away
    // after the honest reveal, a wrong result's slash. Neither pays the client a share (a
    // client could make its providers miss or exit): both are burned.
    let slash = BOND * u128::from(MISSED_SLASH_PPM) / 1_000_000;
    let exit_slash = BOND * u128::from(WRONG_RESULT_SLASH_PPM) / 1_000_000;
    let providers = cli.query(&["staking", "providers"])?;
    let bonded = |name: &str| -> anyhow::Result<u128> {
        let address = net.net.account(name)?.to_string();
        let p = providers
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["operator"] == address.as_str()))
            .cloned()
            .unwrap_or_default();
        Ok(amount(&p["bonded"]))
    };
    assert_eq!(bonded("copier")?, BOND - exit_slash);
    assert_eq!(bonded("idle")?, BOND - slash);
    assert_eq!(bonded("honest")?, BOND);

    // Only k providers bid, so the clearing price is the highest winning ask.
    let price = 900_000;
    let balance = |name: &str| {
        let chain = &chain;
        let address = net.net.account(name);
        async move { chain.balance(&address?).await }
    };
    assert_eq!(
        balance("honest").await?,
        2_000 * GPU - BOND - fees["honest"] + price - price * TAKE_RATE_PPM / 1_000_000,
        "the honest provider is paid the clearing price minus the take rate"
    );
    for p in ["copier", "idle"] {
        assert_eq!(
            balance(p).await?,
            2_000 * GPU - BOND - fees[p],
            "{p} is paid nothing"
        );
    }
    let verification_fee = 3 * GPU * FEE_PPM / 1_000_000;
    assert_eq!(
        balance("client").await?,
        10_000 * GPU - fees["client"] - price - verification_fee,
        "the client paid one replica and the fee, and no share of either slash"
    );

    // A retention after the order settled it is gone from live state, and the CLI says why.
    // Block time is the validators' clock, so once this much wall time has passed, the
    // second block after it is at least a retention after the settlement.
    tokio::time::sleep(std::time::Duration::from_secs(RETENTION_SECS + 1)).await;
    let now = chain.latest_height().await?;
    chain
        .wait_for_height(now + 2, std::time::Duration::from_secs(120))
        .await?;
    let out = gpuchain_tests::cli(&["query", "auction", "lease", &honest, "--node", cli.node()])?;
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && said.contains("was retired"),
        "a retired lease is named as such: {said}"
    );
    assert!(cli
        .query(&["auction", "orders"])?
        .as_array()
        .is_some_and(|o| o.is_empty()));
    Ok(())
}
