//! The fault-injection suite, part two, on a real localnet with audits off (audit_min =
//! audit_max = 0), so only disputes and ringers catch cheats:
//! - k = 2, an honest CPU agent and a copier in one region: the copier's reveal of the
//!   other's hash fails commit-reveal, it misses and is slashed; the honest lone result is
//!   accepted and paid.
//! - k = 2, an honest canonical agent and a random-output cheat: the results disagree, both
//!   leases are disputed, the verifier agent re-executes on the canonical path and posts
//!   `honest` for one and `faulty` for the other: the cheat is faulted, the honest one paid.
//! - A ringer: the verifier agent commits the expected answer of a digits job (input rows
//!   drawn from its pool, answer computed on the canonical path), an ordinary account posts
//!   the order, a wrong-model cheat wins it, its result is accepted (no audit), and the
//!   verifier's reveal proves the fault: the cheat is faulted and slashed with the verifier
//!   as prover.
//! - A second ringer won by an honest CPU agent: its output differs from the canonical
//!   expected answer in the last bits, so the verifier finds it within tolerance and does
//!   not reveal (the reveal would fault it); the honest provider is paid and never slashed.
//!
//! The supply moves only by the burns the slash records show.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gpuchain_auction::{LeaseState, Order};
use gpuchain_client::keys::Keystore;
use gpuchain_tests::{
    assert_supply_moved_only_by_burns, blob, digits_input, digits_job, digits_mlp_weights,
    free_port_block, no_audits, order_leases, print_result, short_reveal_and_challenge,
    slash_records, slashes_of, supply, terminate_agents, verdict_windows, wait_for, BlobHost,
    Market, ProviderAgent, ProviderRole, TestNet, VerifierAgent, VerifierSpec,
};

const GPU: u128 = 1_000_000;

const PROVIDERS: [ProviderRole; 6] = [
    ("pa", "r-pair-a", "cpu", None),
    ("copier", "r-pair-a", "cpu", Some("copy")),
    ("pb", "r-pair-b", "canonical", None),
    ("random2", "r-pair-b", "cpu", Some("random-output")),
    ("wm", "r-ringer", "cpu", Some("wrong-model")),
    ("hc", "r-ringer-cpu", "cpu", None),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ringers_and_disputes_catch_cheats_on_two_replica_orders() -> anyhow::Result<()> {
    let started = Instant::now();
    let mut accounts = vec![
        ("client", 10_000 * GPU),
        ("poster", 1_000 * GPU),
        ("poster2", 1_000 * GPU),
        ("v1", 3_000 * GPU),
    ];
    accounts.extend(PROVIDERS.iter().map(|p| (p.0, 2_000 * GPU)));
    let net = TestNet::start_with(1, &accounts, |spec| {
        short_reveal_and_challenge(spec);
        spec.genesis.auction.params.challenge_window_blocks = 40;
        no_audits(spec);
        verdict_windows(spec, 300, 120);
    })
    .await?;
    let chain = net.client(0)?;
    let node = net.net.nodes[0].rpc_url.clone();
    let supply_before = supply(&chain).await?;
    let dir = tempfile::tempdir()?;
    let market = Market::new(&net)?;
    let mut agents = market.providers(&PROVIDERS)?;
    wait_for("agents to start", 90, || {
        agents.iter().all(ProviderAgent::started).then_some(())
    })
    .await;

    let host = BlobHost::start()?;
    let weights = digits_mlp_weights()?;
    let w = blob(&weights, host.put("w", weights.clone()));

    // The verifier's ringer pool: one digits job; each ringer draws 24 rows of its input.
    let pool_input = digits_input(64, 99);
    let pool_x = blob(&pool_input, host.put("pool", pool_input.clone()));
    let pool_spec = dir.path().join("ringer-job.json");
    std::fs::write(
        &pool_spec,
        serde_json::to_string(&digits_job(w.clone(), pool_x))?,
    )?;
    let ports = free_port_block(2);
    let (metrics_port, ringer_port) = (ports, ports + 1);
    let challenge = format!(
        r#"[challenge]
enabled = true
every_blocks = 1
max_total = 2
max_open = 2
posters = ["poster", "poster2"]
post_delay_max_blocks = 3
blob_listen = "127.0.0.1:{ringer_port}"
blob_url = "http://127.0.0.1:{ringer_port}"
pool = [
  {{ spec = "{spec}", max_price_per_replica = {GPU}, bid_window_blocks = 15, exec_deadline_blocks = 40, region = "r-ringer", draw_rows = 24 }},
  {{ spec = "{spec}", max_price_per_replica = {GPU}, bid_window_blocks = 15, exec_deadline_blocks = 40, region = "r-ringer-cpu", draw_rows = 24 }},
]
"#,
        spec = pool_spec.display()
    );
    let vconfig = VerifierSpec {
        node: node.clone(),
        keys_home: net.keys_home(),
        key: "v1".into(),
        dir: dir.path().join("v1"),
        metrics_port,
        backend: "cpu".into(),
        bond: 1_000 * GPU,
        challenge,
    }
    .write_config()?;
    VerifierAgent::register(&vconfig)?;
    let mut verifier = VerifierAgent::spawn(&vconfig)?;

    // Two k = 2 orders from the client.
    let mut orders = BTreeMap::new();
    for (i, region) in ["r-pair-a", "r-pair-b"].into_iter().enumerate() {
        let id = market
            .post_digits_order("client", region, 2, 10 + i as u32)
            .await?;
        orders.insert(region, id);
    }
    // The ringer orders, posted by the ordinary account.
    let keys = Keystore::open(&net.net.keys_dir)?;
    let posters = [keys.show("poster")?.address, keys.show("poster2")?.address];
    for (i, region) in ["r-ringer", "r-ringer-cpu"].into_iter().enumerate() {
        let ringer = wait_for("the ringer order", 90, || {
            let s = verifier.status().ok()?;
            s["ringers"][i]["order_id"].as_u64()
        })
        .await;
        let order: Order = chain
            .get(&gpuchain_auction::state_key::order(ringer))
            .await?
            .expect("ringer order");
        assert_eq!(
            order.client, posters[i],
            "each ringer comes from its own ordinary account, used once"
        );
        orders.insert(region, ringer);
    }

    // Everything settles.
    let deadline = Instant::now() + Duration::from_secs(150);
    let finals = loop {
        let mut all = BTreeMap::new();
        for id in orders.values() {
            for l in order_leases(&chain, *id).await? {
                all.insert(l.provider, l);
            }
        }
        if all.len() == PROVIDERS.len() && all.values().all(|l| l.state.is_final()) {
            break all;
        }
        if Instant::now() > deadline {
            let s = verifier.status().ok();
            panic!("not settled: {all:#?}\nverifier: {s:#?}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let keys = Keystore::open(&net.net.keys_dir)?;
    let v1 = keys.show("v1")?.address.to_string();
    let records = slash_records(&node)?;
    for role in PROVIDERS {
        let (name, _, _, cheat) = role;
        let addr = keys.show(name)?.address;
        let lease = &finals[&addr];
        let recs = slashes_of(&records, &addr.to_string());
        print_result(role, lease, recs.len());
        match cheat {
            None => {
                assert_eq!(lease.state, LeaseState::Paid, "{name} is paid");
                assert!(recs.is_empty(), "{name} is never slashed");
            }
            Some("copy") => {
                assert_eq!(lease.state, LeaseState::Missed, "the copier misses");
                assert_eq!(recs.len(), 1);
            }
            Some(kind) => {
                assert_eq!(lease.state, LeaseState::Faulted, "{kind} is faulted");
                assert_eq!(recs.len(), 1);
                assert_eq!(recs[0]["prover"], v1, "{kind}: proven by the verifier");
            }
        }
    }
    let status = verifier.status()?;
    let honest_ringer = wait_for("the honest ringer's outcome", 60, || {
        let s = verifier.status().ok()?;
        (s["ringers"][1]["stage"] == "abandoned").then(|| s["ringers"][1].clone())
    })
    .await;
    assert!(
        honest_ringer["reason"]
            .as_str()
            .is_some_and(|r| r.contains("another backend")),
        "not revealed on an honest CPU result: {honest_ringer:#}"
    );
    let r = &status["ringers"][0];
    assert_eq!(r["stage"], "revealed", "{status:#}");
    assert_eq!(
        (r["passed"].as_u64(), r["failed"].as_u64()),
        (Some(0), Some(1)),
        "{status:#}"
    );
    assert_eq!(
        status["counters"]["verdicts_faulty"], 1,
        "the dispute's cheat: {status:#}"
    );
    // Nobody confirmed a receipt in this test: every honest lease that no verdict judged
    // was fetched by the verifier (an availability check, no re-run) before it was paid.
    let cases = status["cases"].as_array().unwrap();
    let availability = cases
        .iter()
        .filter(|c| c["backend"] == "none (availability)")
        .count();
    assert!(availability >= 1, "availability checks ran: {status:#}");
    for case in cases {
        assert!(
            case["backend"] == "canonical" || case["backend"] == "none (availability)",
            "disputes run on the canonical path: {case:#}"
        );
    }
    assert_eq!(
        status["counters"]["verdicts_honest"].as_u64(),
        Some(1 + availability as u64),
        "the dispute's honest side and the available outputs: {status:#}"
    );
    assert_supply_moved_only_by_burns(&chain, supply_before, &records).await?;

    terminate_agents(&mut verifier, &mut agents)?;
    println!(
        "FIGURES fault-injection k=2 + ringer: settled in {:.1} s (whole test)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
