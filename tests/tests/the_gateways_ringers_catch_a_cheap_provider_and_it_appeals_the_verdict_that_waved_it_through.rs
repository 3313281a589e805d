//! Ringers catch what a lazy jury waves through: a provider answers its lease with a cheaper
//! model's tokens (`--dishonest-answers`), its only verifier rubber-stamps every audit
//! `honest`, and the client's gateway runs with `--ringers`, a request whose right answer
//! it knows (SmolLM2's greedy answer on this machine). A first question is answered,
//! acknowledged, claimed, audited and stamped `honest`, the verdict standing open to appeal.
//! Then a ringer goes to the provider among ordinary traffic and comes back wrong: the
//! gateway catches the provider, never routes to it again (the next question finds no
//! provider), leaves the ringer's answer out of its acknowledgements (the provider can claim
//! only the first question), and appeals the `honest` verdict standing on its claim. With no
//! fresh verifier to judge the appeal, the first verdict then applies and the deposit goes
//! back; `a_client_appeals_a_rubber_stamped_verdict_…` shows a fresh jury overturning one.

use std::time::Duration;

use anyhow::ensure;
use gpuchain_serving::{ClaimStage, ServingRead};
use gpuchain_tests::serving::metric_value;
use gpuchain_tests::serving_market::{
    ringer_args, smollm2_ringer, MarketOptions, OpenedBy, ServingMarket,
};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateways_ringers_catch_a_cheap_provider_and_it_appeals_the_verdict_that_waved_it_through(
) -> anyhow::Result<()> {
    let ringer_dir = tempfile::tempdir()?;
    let ringers = smollm2_ringer(ringer_dir.path(), "Name a colour.", 6)?;
    let m = ServingMarket::start_with(
        1,
        &["--dishonest-answers"],
        OpenedBy::Cli,
        MarketOptions {
            rubber_stamps: 1,
            appeal_window_blocks: 120,
            // Well after the first question is answered, so the ringer comes second.
            gateway_args: ringer_args(&ringers, 8),
            ..MarketOptions::default()
        },
    )
    .await?;
    let question = json!({"model": "smollm2", "max_tokens": 6, "temperature": 0,
                          "messages": [{"role": "user", "content": "Count to three."}]});
    let answer = m.ask("/v1/chat/completions", &question).await?;
    ensure!(answer["usage"]["total_tokens"].as_u64().is_some());

    // The ringer catches the provider; the gateway appeals the verdict standing on its claim.
    let log_path = m.dir.path().join("gateway.log");
    let mut log = String::new();
    for _ in 0..1200 {
        log = std::fs::read_to_string(&log_path).unwrap_or_default();
        if log.contains("appealed an honest verdict on a caught provider's claim") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    ensure!(
        log.contains("ringer answered wrong")
            && log.contains("appealed an honest verdict on a caught provider's claim"),
        "the gateway catches the provider by its ringer and appeals: {log}"
    );

    // Never routed to again.
    let refused = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", m.gateway.url))
        .header("content-type", "application/json")
        .body(question.to_string())
        .send()
        .await?;
    ensure!(
        refused.status().as_u16() == 503,
        "a caught provider gets no more requests: {}",
        refused.status()
    );

    // Only the first question is claimed: the ringer's answer was never acknowledged.
    let lease = m.settled(1, 300).await?;
    ensure!(
        lease.next_seq == 1,
        "the provider claimed requests up to {} (the ringer was the second)",
        lease.next_seq
    );
    let state = m
        .chain
        .snapshot(gpuchain_serving::state_key::module_prefix())
        .await?;
    ensure!(
        !state
            .serving_claims()
            .iter()
            .any(|c| matches!(c.stage, ClaimStage::Standing { .. })),
        "the appealed verdict is settled"
    );
    let metrics = reqwest::get(format!("{}/metrics", m.gateway.url))
        .await?
        .text()
        .await?;
    ensure!(
        metric_value(&metrics, "gpuchain_gateway_ringers_failed_total") == Some(1.0)
            && metrics
                .lines()
                .any(|l| l.starts_with("gpuchain_gateway_upstream_caught{") && l.ends_with(" 1")),
        "{metrics}"
    );
    Ok(())
}
