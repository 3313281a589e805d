//! A provider that answers its lease with a cheaper model's tokens (test-only
//! `--dishonest-answers`: every token shifted, the text and receipt consistent with what it
//! sent, so the client's gateway acknowledges it) is caught: every claim is audited, the
//! provider agent reveals the answer it served, two drawn verifiers find tokens the model
//! does not pick, and their `faulty` verdict stands. The client's gateway reads it and
//! stops routing to the provider while it stands (a request then finds no provider). The
//! provider agent, which cannot tell its endpoint cheated, appeals it; no fresh verifier is
//! left to judge the appeal, so the verdict applies and the deposit goes back: the chain
//! slashes the provider for a wrong result, refunds the whole claim to the client and takes
//! the lease from the provider. Nothing is paid for it.

use anyhow::{ensure, Context};
use gpuchain_serving::ServingLeaseState;
use gpuchain_serving::{ClaimStage, ServingRead};
use gpuchain_tests::serving_market::{key_address, MarketOptions, OpenedBy, ServingMarket};
use gpuchain_tests::{run_json, slash_records, tx_fee};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_serving_a_cheaper_answer_is_caught_by_audit_and_refunds_the_client(
) -> anyhow::Result<()> {
    let options = MarketOptions {
        gateway_args: vec!["--chain-read-every-ms".into(), "200".into()],
        ..MarketOptions::default()
    };
    let m = ServingMarket::start_with(2, &["--dishonest-answers"], OpenedBy::Cli, options).await?;
    for content in ["Name a colour.", "Count to three."] {
        let answer = m
            .ask(
                "/v1/chat/completions",
                &json!({"model": "smollm2", "max_tokens": 6, "temperature": 0,
                        "messages": [{"role": "user", "content": content}]}),
            )
            .await?;
        ensure!(answer["usage"]["total_tokens"].as_u64().is_some());
    }
    // While the faulty verdict stands (or the provider's appeal of it runs), the gateway
    // sends nothing there: with no other provider, a request finds none trusted.
    let http = reqwest::Client::new();
    let mut suspended_seen = false;
    for _ in 0..1_200 {
        let state = m
            .chain
            .snapshot(gpuchain_serving::state_key::claims_prefix())
            .await?;
        let faulty_stands = state.serving_claims().iter().any(|c| {
            matches!(c.stage, ClaimStage::Standing { honest: false, .. })
                || matches!(&c.stage, ClaimStage::Judging(j) if j.appeal.is_some())
        });
        if faulty_stands {
            let metrics = http
                .get(format!("{}/metrics", m.gateway.url))
                .send()
                .await?
                .text()
                .await?;
            if metrics
                .lines()
                .any(|l| l.starts_with("gpuchain_gateway_upstream_suspended{") && l.ends_with(" 1"))
            {
                let refused = http
                    .post(format!("{}/v1/chat/completions", m.gateway.url))
                    .header("content-type", "application/json")
                    .body(
                        json!({"model": "smollm2", "max_tokens": 4, "temperature": 0,
                               "messages": [{"role": "user", "content": "Hello?"}]})
                        .to_string(),
                    )
                    .send()
                    .await?;
                ensure!(
                    refused.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE,
                    "a suspended provider gets no request: {}",
                    refused.status()
                );
                suspended_seen = true;
                break;
            }
        } else if state.serving_claims().is_empty()
            && m.settled(2, 1).await.is_ok_and(|l| l.paid == 0)
        {
            break; // settled before the gateway was seen suspending the provider
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    ensure!(
        suspended_seen,
        "the gateway suspends the provider while its faulty verdict stands (logs in {})",
        m.dir.path().display()
    );
    let caught = m.settled(2, 300).await?;
    ensure!(caught.paid == 0, "the cheat was paid {}", caught.paid);
    ensure!(
        caught.state == ServingLeaseState::Dropped,
        "the lease is taken from the cheat: {:?}",
        caught.state
    );
    // The agent logs its appeal once it sees it committed, which may be after the claim
    // settled in that same block.
    let appealed = |log: &str| {
        log.lines()
            .any(|l| l.contains("appeal of a faulty serving verdict") && l.contains("committed"))
    };
    let mut log = m.provider_log();
    for _ in 0..120 {
        if appealed(&log) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        log = m.provider_log();
    }
    ensure!(
        appealed(&log),
        "the provider agent appeals the faulty verdict on its claim: {log}"
    );
    let slashes = slash_records(&m.node)?;
    let wrong: Vec<_> = slashes
        .iter()
        .filter(|s| s.to_string().contains("wrong_result"))
        .collect();
    ensure!(
        !wrong.is_empty(),
        "the provider is slashed for a wrong result: {slashes:?}"
    );
    let escrow = m
        .chain
        .balance(&gpuchain_serving::module_account::serving_escrow())
        .await?;
    let order = m
        .chain
        .get::<gpuchain_serving::ServingOrder>(&gpuchain_serving::state_key::order(
            m.lease.order_id,
        ))
        .await?
        .context("the order")?;
    ensure!(
        escrow == order.deposit,
        "the claim left escrow for the client, not the provider: escrow {escrow}, deposit {}",
        order.deposit
    );

    let client = key_address(&m.home, "client")?.parse()?;
    let before = m.chain.balance(&client).await?;
    let order_id = m.lease.order_id.to_string();
    let outcome = run_json(&[
        "tx", "serving", "end", "client", &order_id, "--home", &m.home, "--node", &m.node,
        "--output", "json",
    ])?;
    ensure!(outcome["code"] == 0, "end refused: {outcome}");
    let fee = tx_fee(&outcome)?;
    let (closed, escrow) = m.closed(60).await?;
    ensure!(closed.deposit == 0 && escrow == 0, "escrow holds {escrow}");
    let after = m.chain.balance(&client).await?;
    ensure!(
        after + fee == before + order.deposit,
        "the client had {before}, paid {fee} to end and got {after}: the deposit {} is back",
        order.deposit
    );
    Ok(())
}
