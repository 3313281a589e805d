//! A serving lease on a real localnet, every process real: the client's `gpuchain-gateway`
//! opens a serving order for SmolLM2 itself (`--open`); a provider agent configured to serve
//! that model bids with its endpoint's URL and wins the lease; the gateway finds the lease and
//! the endpoint on chain; the `serve-model` endpoint answers on the lease and writes a
//! receipt per answer; the gateway signs each request, checks every
//! receipt against what arrived and acknowledges batches; the provider agent claims them;
//! with audits on every claim, the provider agent reveals the drawn receipt and a verifier
//! agent re-checks the answer by teacher forcing and calls it honest, so the provider is paid
//! exactly for the units the client was told and nobody is slashed. Then the endpoint dies:
//! the gateway reports the lease on chain, the provider agent finds its endpoint down and
//! sends no heartbeat, and the provider loses the lease and the abandoned-lease share of its
//! bond. When the gateway is stopped (SIGTERM) it ends the order it opened, and after the
//! claim grace the rest of the deposit goes back and escrow is empty.

use std::time::Duration;

use anyhow::{ensure, Context};
use gpuchain_tests::serving_market::{key_address, OpenedBy, ServingMarket, SERVING_PRICE};
use gpuchain_tests::slash_records;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serving_lease_pays_for_acknowledged_answers_after_a_verifier_audits_them(
) -> anyhow::Result<()> {
    let mut m = ServingMarket::start(1, &[], OpenedBy::Gateway).await?;
    ensure!(
        m.lease.price == u128::from(SERVING_PRICE),
        "uniform price is the only bid"
    );

    // Three answers: greedy, seeded, and a plain text completion.
    let mut told = 0u64;
    for (path, body) in [
        (
            "/v1/chat/completions",
            json!({"model": "smollm2", "max_tokens": 6, "temperature": 0,
                   "messages": [{"role": "user", "content": "Name a colour."}]}),
        ),
        (
            "/v1/chat/completions",
            json!({"model": "smollm2", "max_tokens": 6, "seed": 7,
                   "messages": [{"role": "user", "content": "Count to three."}]}),
        ),
        (
            "/v1/completions",
            json!({"model": "smollm2", "max_tokens": 5, "temperature": 0,
                   "prompt": "The sky is"}),
        ),
    ] {
        let answer = m.ask(path, &body).await?;
        told += answer["usage"]["total_tokens"]
            .as_u64()
            .context("usage in the answer")?;
    }

    // An answer too large to reveal on chain if audited is refused, not served unpaid.
    let refused = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", m.gateway.url))
        .header("content-type", "application/json")
        .body(
            json!({"model": "smollm2", "max_tokens": 4000, "temperature": 0,
                   "messages": [{"role": "user", "content": "Write a long story."}]})
            .to_string(),
        )
        .send()
        .await?;
    ensure!(refused.status().as_u16() == 413, "{}", refused.status());
    ensure!(refused
        .text()
        .await?
        .contains("too large to serve on a lease"));

    // Acknowledged, claimed, audited, revealed, judged honest and paid.
    let paid = m.settled(3, 240).await?;
    ensure!(
        paid.units == u128::from(told),
        "the provider claimed {} units, the client was told {told}",
        paid.units
    );
    let most = paid.units * u128::from(SERVING_PRICE) / 1_000_000;
    ensure!(
        paid.paid <= most && paid.paid + 2 >= most,
        "paid {} for {} units at {SERVING_PRICE} per million",
        paid.paid,
        paid.units
    );
    let slashes = slash_records(&m.node)?;
    ensure!(slashes.is_empty(), "nobody is slashed: {slashes:?}");
    let verifier = m
        .chain
        .get::<gpuchain_verify::Verifier>(&gpuchain_verify::state_key::verifier(
            &key_address(&m.home, "verifier0")?.parse()?,
        ))
        .await?
        .context("verifier record")?;
    ensure!(
        verifier.verdicts >= 1,
        "the verifier judged the audited claims"
    );

    // The endpoint dies: reported by the gateway, no heartbeat, the lease is lost.
    m.server.kill();
    let _ = m
        .ask(
            "/v1/chat/completions",
            &json!({"model": "smollm2", "max_tokens": 2, "temperature": 0,
                    "messages": [{"role": "user", "content": "Hello?"}]}),
        )
        .await;
    let mut dropped = None;
    for _ in 0..240 {
        let lease = m
            .chain
            .get::<gpuchain_serving::ServingLease>(&gpuchain_serving::state_key::lease(m.lease.id))
            .await?
            .context("the lease")?;
        if lease.state == gpuchain_serving::ServingLeaseState::Dropped {
            dropped = Some(lease);
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    ensure!(
        dropped.is_some(),
        "the dead provider kept its lease (logs in {})",
        m.dir.path().display()
    );
    let slashes = slash_records(&m.node)?;
    ensure!(
        slashes
            .iter()
            .any(|s| s.to_string().contains("abandoned_lease")),
        "the dead provider loses the abandoned-lease share: {slashes:?}"
    );

    // The client stops its gateway, which ends the order it opened; after the grace the rest
    // of the deposit is back.
    ensure!(
        m.gateway.terminate()?,
        "the gateway stops cleanly on SIGTERM"
    );
    let (order, escrow) = m.closed(60).await?;
    ensure!(order.deposit == 0);
    ensure!(
        escrow == 0,
        "serving escrow holds {escrow} after the order closed"
    );
    Ok(())
}
