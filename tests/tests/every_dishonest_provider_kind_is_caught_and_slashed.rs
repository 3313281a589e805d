//! The fault-injection suite on a real localnet, k = 1: a `gpuchain-verifier` agent and
//! eight `gpuchain-provider` agents, each registered in a region of its own so that every
//! test order reaches exactly one of them. Two are honest on different backends (the
//! multi-threaded CPU backend and the canonical path); six cheat with the hidden test flag
//! (random output, wrong model, one layer skipped, a stale result, a late reveal, an
//! abandoned lease). Audits are certain (audit_min = audit_max = 100%), so every revealed
//! result is re-executed by the verifier agent on its CPU fast path and compared under the
//! digits tolerance. Every cheat ends Faulted or Missed with a slash record; both honest
//! providers are paid and never slashed; the supply only moves by the burns the slash
//! records show.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gpuchain_auction::LeaseState;
use gpuchain_client::keys::Keystore;
use gpuchain_tests::{
    amount, assert_supply_moved_only_by_burns, audit_every_result, order_leases, print_result,
    short_reveal_and_challenge, slash_records, slashes_of, supply, terminate_agents,
    verdict_windows, wait_for, Market, ProviderAgent, ProviderRole, TestNet,
};

const GPU: u128 = 1_000_000;

const PROVIDERS: [ProviderRole; 8] = [
    ("honest_cpu", "r-honest-cpu", "cpu", None),
    ("honest_canon", "r-honest-canon", "canonical", None),
    ("random", "r-random", "cpu", Some("random-output")),
    ("wrongmodel", "r-wrongmodel", "cpu", Some("wrong-model")),
    ("skiplayer", "r-skiplayer", "cpu", Some("skip-layer")),
    ("stale", "r-stale", "cpu", Some("stale")),
    ("late", "r-late", "cpu", Some("late-reveal")),
    ("abandon", "r-abandon", "cpu", Some("abandon")),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dishonest_provider_kind_is_caught_and_slashed() -> anyhow::Result<()> {
    let started = Instant::now();
    let mut accounts = vec![("client", 10_000 * GPU), ("v1", 3_000 * GPU)];
    accounts.extend(PROVIDERS.iter().map(|p| (p.0, 2_000 * GPU)));
    let net = TestNet::start_with(1, &accounts, |spec| {
        short_reveal_and_challenge(spec);
        audit_every_result(spec);
        verdict_windows(spec, 300, 120);
    })
    .await?;
    let chain = net.client(0)?;
    let node = net.net.nodes[0].rpc_url.clone();
    let supply_before = supply(&chain).await?;
    let market = Market::new(&net)?;

    // The verifier registers and runs on the CPU fast path for first rounds.
    let mut verifier = market.verifier("v1")?;
    let mut agents = market.providers(&PROVIDERS)?;
    wait_for("agents to start", 90, || {
        (agents.iter().all(ProviderAgent::started) && verifier.started()).then_some(())
    })
    .await;

    // One order per region, each with an input of its own.
    let mut orders = BTreeMap::new();
    for (i, (name, region, _, _)) in PROVIDERS.iter().enumerate() {
        let id = market
            .post_digits_order("client", region, 1, i as u32)
            .await?;
        orders.insert(*name, id);
    }

    // Every order settles: the honest leases paid, every cheat faulted or missed.
    let mut finals = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(150);
    while finals.len() < orders.len() {
        for (name, id) in &orders {
            if finals.contains_key(name) {
                continue;
            }
            let leases = order_leases(&chain, *id).await?;
            if let Some(l) = leases.first().filter(|l| l.state.is_final()) {
                finals.insert(*name, l.clone());
            }
        }
        if Instant::now() > deadline {
            let s = verifier.status().ok();
            panic!(
                "orders not settled: {finals:?}\nverifier: {s:#?}\n{}",
                verifier.log_text()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let records = slash_records(&node)?;
    let slashed = |addr: &str| slashes_of(&records, addr);
    for role in PROVIDERS {
        let (name, _, _, cheat) = role;
        let lease = &finals[name];
        let recs = slashed(&lease.provider.to_string());
        print_result(role, lease, recs.len());
        match cheat {
            None => {
                assert_eq!(lease.state, LeaseState::Paid, "{name} is paid");
                assert!(recs.is_empty(), "{name} is never slashed: {recs:?}");
            }
            Some(kind) => {
                assert!(
                    matches!(
                        lease.state,
                        LeaseState::Faulted | LeaseState::Missed | LeaseState::Released
                    ),
                    "{kind} is caught: {:?}",
                    lease.state
                );
                assert_eq!(recs.len(), 1, "{kind} has one slash record");
                assert!(
                    amount(&recs[0]["outcome"]["slashed"]) > 0,
                    "{kind}: {:?}",
                    recs[0]
                );
            }
        }
    }
    // Wrong results were proven by the verifier (it is the prover of their slashes).
    let v1 = Keystore::open(&net.net.keys_dir)?.show("v1")?.address;
    for name in ["random", "wrongmodel", "skiplayer", "stale"] {
        let lease = &finals[name];
        assert_eq!(
            lease.state,
            LeaseState::Faulted,
            "{name} faulted by a verdict"
        );
        let recs = slashed(&lease.provider.to_string());
        assert_eq!(recs[0]["prover"], v1.to_string(), "{name}: {:?}", recs[0]);
    }

    // The verifier's own record: four faulty and two honest first-round verdicts.
    let status = wait_for("the verifier's counters", 30, || {
        let s = verifier.status().ok()?;
        (s["counters"]["verdicts_faulty"].as_u64()? >= 4).then_some(s)
    })
    .await;
    assert_eq!(status["counters"]["verdicts_faulty"], 4, "{status:#}");
    assert_eq!(status["counters"]["verdicts_honest"], 2, "{status:#}");
    assert_eq!(status["counters"]["verdicts_failed"], 0, "{status:#}");
    let metrics = std::process::Command::new("curl")
        .args(["-sf", &verifier.metrics_url()?])
        .output()?;
    let metrics = String::from_utf8_lossy(&metrics.stdout);
    assert!(
        metrics.contains("gpuchain_verifier_verdicts_total{verdict=\"faulty\"} 4"),
        "{metrics}"
    );
    assert!(
        metrics.contains("gpuchain_verifier_assignments_total 6"),
        "{metrics}"
    );

    // Supply: only the burns recorded in the slash records left it.
    assert_supply_moved_only_by_burns(&chain, supply_before, &records).await?;

    terminate_agents(&mut verifier, &mut agents)?;
    println!(
        "FIGURES fault-injection k=1: {} orders settled in {:.1} s (whole test)",
        orders.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
