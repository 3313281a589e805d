//! A model kept served past its order's end, on a real localnet with the real agents: the
//! client's `gpuchain-gateway` opens a serving order for SmolLM2 of 80 blocks with
//! `--renew-before-blocks 50`. Thirty blocks in it opens the same order again; the provider
//! agent bids on it and wins a second lease; the gateway routes over the new lease once it
//! clears and stops routing over the first once it ends. A client asking all the while gets
//! every answer, the later ones on the second lease, and the provider is paid on both leases
//! for what it answered on each, ringers of known answer included (answered right, so the
//! provider stays routed to). Stopped, the gateway ends every order it opened (the
//! replacement may itself have been renewed by then), a renewal in flight included: every
//! order closes and the client has its deposits' rest back.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use gpuchain_serving::{ServingLease, ServingLeaseState, ServingOrderState, ServingRead};
use gpuchain_tests::serving::metric_value;
use gpuchain_tests::serving_market::{
    ringer_args, smollm2_ringer, MarketOptions, OpenedBy, ServingMarket,
};
use serde_json::json;

async fn leases(m: &ServingMarket) -> anyhow::Result<Vec<ServingLease>> {
    Ok(m.chain
        .snapshot(gpuchain_serving::state_key::module_prefix())
        .await?
        .serving_leases())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_renews_its_order_before_the_leases_end_and_answers_throughout(
) -> anyhow::Result<()> {
    // Ringers of known answer go to every lease now and then; an honest provider answers
    // them right and stays routed to.
    let ringer_dir = tempfile::tempdir()?;
    let ringers = smollm2_ringer(ringer_dir.path(), "Name a colour.", 3)?;
    let mut m = ServingMarket::start_with(
        1,
        &[],
        OpenedBy::GatewayRenewing {
            blocks: 80,
            renew_before: 50,
        },
        MarketOptions {
            gateway_args: ringer_args(&ringers, 3),
            ..MarketOptions::default()
        },
    )
    .await?;
    let first = m.lease.clone();
    let question = json!({"model": "smollm2", "max_tokens": 3, "temperature": 0,
                          "messages": [{"role": "user", "content": "Name a colour."}]});
    let started = Instant::now();
    let mut answered = 0u64;
    // Ask until the first lease has ended and a few more answers came after it.
    let mut after_end = 0;
    while after_end < 3 {
        ensure!(
            started.elapsed() < Duration::from_secs(180),
            "the first lease (ending at {}) did not end in time (logs in {})",
            first.end_height,
            m.dir.path().display()
        );
        let answer = m
            .ask("/v1/chat/completions", &question)
            .await
            .with_context(|| {
                format!(
                    "answer {} was lost (logs in {})",
                    answered + 1,
                    m.dir.path().display()
                )
            })?;
        ensure!(
            answer["usage"]["total_tokens"].as_u64().is_some(),
            "{answer}"
        );
        answered += 1;
        if m.chain.latest_height().await? > first.end_height + 2 {
            after_end += 1;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    let all = leases(&m).await?;
    let second = all
        .iter()
        .find(|l| l.order_id != first.order_id)
        .context("no lease of a second order: the gateway did not renew")?;
    ensure!(second.provider == first.provider);
    ensure!(
        second.start_height < first.end_height,
        "the second lease ({}..{}) began before the first ended ({}): no gap",
        second.start_height,
        second.end_height,
        first.end_height
    );
    ensure!(
        second.state == ServingLeaseState::Serving,
        "{:?}",
        second.state
    );

    // Every answer is claimed and paid, on one lease or the other, the later ones on the
    // second.
    let mut paid = (0u128, 0u128, 0u64);
    for _ in 0..480 {
        let all = leases(&m).await?;
        let of = |id: u64| all.iter().find(|l| l.id == id);
        let (Some(a), Some(b)) = (of(first.id), of(second.id)) else {
            anyhow::bail!("a lease disappeared");
        };
        paid = (a.paid, b.paid, a.next_seq + b.next_seq);
        if paid.2 >= answered && a.paid > 0 && b.paid > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    ensure!(
        paid.2 >= answered && paid.0 > 0 && paid.1 > 0,
        "{answered} answers; claimed {} requests, paid {} on the first lease and {} on the \
         second (logs in {})",
        paid.2,
        paid.0,
        paid.1,
        m.dir.path().display()
    );
    // The first lease is retired once its end height passes, which may come after both
    // leases were paid.
    let mut log = String::new();
    for _ in 0..120 {
        log = std::fs::read_to_string(m.dir.path().join("gateway.log")).unwrap_or_default();
        if log.contains("opened its replacement") && log.contains("not routed to") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    ensure!(
        log.contains("opened its replacement") && log.contains("not routed to"),
        "the gateway logs the renewal and the retirement: {log}"
    );
    let metrics = reqwest::get(format!("{}/metrics", m.gateway.url))
        .await?
        .text()
        .await?;
    ensure!(
        metric_value(&metrics, "gpuchain_gateway_ringers_passed_total").is_some_and(|n| n >= 1.0)
            && metric_value(&metrics, "gpuchain_gateway_ringers_failed_total") == Some(0.0)
            && !log.contains("ringer answered wrong"),
        "the honest provider answers every ringer right: {metrics}"
    );

    ensure!(m.gateway.terminate()?, "the gateway did not stop cleanly");
    let mut orders = Vec::new();
    for _ in 0..240 {
        orders = m
            .chain
            .snapshot(gpuchain_serving::state_key::module_prefix())
            .await?
            .serving_orders();
        if orders.iter().all(|o| o.state == ServingOrderState::Closed) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let states: Vec<_> = orders.iter().map(|o| (o.id, o.state)).collect();
    ensure!(
        orders.iter().any(|o| o.id == second.order_id)
            && orders.iter().all(|o| o.state == ServingOrderState::Closed),
        "the replacement (order {}) and every order the gateway opened closed once it \
         stopped: {states:?} (logs in {})",
        second.order_id,
        m.dir.path().display()
    );
    // Claims still open when their order closed (a verdict standing open to appeal) settle
    // within the appeal window; then escrow is empty.
    let mut escrow = u128::MAX;
    for _ in 0..240 {
        escrow = m
            .chain
            .balance(&gpuchain_serving::module_account::serving_escrow())
            .await?;
        if escrow == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    ensure!(escrow == 0, "the serving escrow still holds {escrow} ugpu");
    Ok(())
}
