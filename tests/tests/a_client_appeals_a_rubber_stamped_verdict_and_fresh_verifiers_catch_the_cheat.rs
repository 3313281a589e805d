//! A jury that waves a cheat through does not make it stick: a provider answers its lease with
//! a cheaper model's tokens (`--dishonest-answers`), every claim is audited, and the only
//! verifier rubber-stamps it `honest` (`--rubber-stamp`: nothing run). The verdict stands
//! open to appeal; two more verifiers join; the client appeals with
//! `gpuchaind tx serving appeal`. The fresh jury re-runs the revealed answer, finds it
//! faulty, and the final verdict applies over both juries: the provider is slashed for a
//! wrong result and paid nothing, the rubber stamp is slashed for its overturned verdict,
//! and the client has the claim, its audit reserve and the appeal deposit back.

use std::time::Duration;

use anyhow::{ensure, Context};
use gpuchain_serving::{ClaimStage, ServingLeaseState, ServingRead};
use gpuchain_tests::serving_market::{key_address, MarketOptions, OpenedBy, ServingMarket};
use gpuchain_tests::{run_json, slash_records, tx_fee};
use gpuchain_verify::VerifyRead;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_appeals_a_rubber_stamped_verdict_and_fresh_verifiers_catch_the_cheat(
) -> anyhow::Result<()> {
    let mut m = ServingMarket::start_with(
        1,
        &["--dishonest-answers"],
        OpenedBy::Cli,
        MarketOptions {
            rubber_stamps: 1,
            spare_verifiers: 2,
            appeal_window_blocks: 120,
            ..MarketOptions::default()
        },
    )
    .await?;
    let answer = m
        .ask(
            "/v1/chat/completions",
            &json!({"model": "smollm2", "max_tokens": 6, "temperature": 0,
                    "messages": [{"role": "user", "content": "Name a colour."}]}),
        )
        .await?;
    ensure!(answer["usage"]["total_tokens"].as_u64().is_some());

    // The rubber stamp's `honest` stands, open to appeal.
    let mut standing = None;
    for _ in 0..1200 {
        let state = m
            .chain
            .snapshot(gpuchain_serving::state_key::module_prefix())
            .await?;
        standing = state
            .serving_claims()
            .into_iter()
            .find(|c| matches!(c.stage, ClaimStage::Standing { honest: true, .. }));
        if standing.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let claim = standing.with_context(|| {
        format!(
            "no standing honest verdict within 300 s (logs in {})",
            m.dir.path().display()
        )
    })?;
    let verify_state = m
        .chain
        .snapshot(gpuchain_verify::state_key::module_prefix())
        .await?;
    let stamp = verify_state
        .verifiers()
        .into_iter()
        .next()
        .context("the rubber stamp")?;

    m.add_verifier("spare0")?;
    m.add_verifier("spare1")?;
    let client = key_address(&m.home, "client")?.parse()?;
    let before = m.chain.balance(&client).await?;
    let claim_id = claim.id.to_string();
    let outcome = run_json(&[
        "tx", "serving", "appeal", "client", &claim_id, "--home", &m.home, "--node", &m.node,
        "--output", "json",
    ])?;
    ensure!(outcome["code"] == 0, "appeal refused: {outcome}");
    let fee = tx_fee(&outcome)?;

    let caught = m.settled(1, 400).await?;
    ensure!(caught.paid == 0, "the cheat was paid {}", caught.paid);
    ensure!(
        caught.state == ServingLeaseState::Dropped,
        "the lease is taken from the cheat: {:?}",
        caught.state
    );
    let slashes = slash_records(&m.node)?;
    ensure!(
        slashes
            .iter()
            .any(|s| s.to_string().contains("wrong_result")),
        "the provider is slashed for a wrong result: {slashes:?}"
    );
    let stamp_after = m
        .chain
        .snapshot(gpuchain_verify::state_key::module_prefix())
        .await?
        .verifier(&stamp.operator)
        .context("the rubber stamp's record")?;
    ensure!(
        stamp_after.bonded < stamp.bonded,
        "the overturned rubber stamp is slashed: bond {} then {}",
        stamp.bonded,
        stamp_after.bonded
    );
    let after = m.chain.balance(&client).await?;
    ensure!(
        after + fee >= before + claim.amount + claim.audit_reserve,
        "the client had {before}, paid {fee} to appeal and has {after}: the claim ({}), its \
         reserve ({}) and the appeal deposit are back",
        claim.amount,
        claim.audit_reserve
    );
    Ok(())
}
