//! Verification: verifiers and their record, open cases, the verdicts, appeals, ringers,
//! audits and slashes as they happened, the slash records and the pools that pay for it.

use std::collections::BTreeMap;

use gpuchain_serving::ServingRead;
use gpuchain_slashing::SlashingRead;
use gpuchain_verify::VerifyRead;
use serde_json::json;

use super::html::{self, esc};
use super::{App, Page, Problem, Reply};
use crate::model::VERIFICATION;
use crate::state::Module;

/// `/verification`.
pub(super) async fn overview(app: &App, _q: &BTreeMap<String, String>) -> Result<Reply, Problem> {
    let (head, snap) = app
        .snapshot(&[
            Module::Verify,
            Module::Slashing,
            Module::Serving,
            Module::Bank,
        ])
        .await?;
    let state = &snap.state;
    let verifiers = state.verifiers();
    // The serving models each verifier declared it judges (juries are drawn among them).
    let judged: BTreeMap<String, Vec<String>> = verifiers
        .iter()
        .map(|v| {
            let models = state.serving_judged_models(&v.operator);
            (
                v.operator.to_string(),
                models.iter().map(hex::encode).collect(),
            )
        })
        .collect();
    let cases = state.cases();
    let challenges = state.challenges();
    let slashes = state.slash_records();
    let events = app.0.model.read().await.history(VERIFICATION);

    let pools: Vec<Vec<String>> = snap
        .pools
        .iter()
        .filter(|p| p.name.starts_with("verif") || p.name == "serving_escrow" || p.name == "escrow")
        .map(|p| vec![esc(p.name), html::gpu(p.balance)])
        .collect();
    let mut body = String::from("<h2>Pools</h2>");
    body.push_str(&html::table(
        "pools",
        &["Pool", "Balance"].map(String::from),
        &pools,
        "No pool.",
    ));

    body.push_str("<h2>Verifiers</h2>");
    let rows: Vec<Vec<String>> = verifiers
        .iter()
        .map(|v| {
            vec![
                html::addr(&v.operator),
                html::gpu(v.bonded),
                v.verdicts.to_string(),
                v.misses.to_string(),
                v.overturned.to_string(),
                v.open_cases.to_string(),
                judged_models(judged.get(&v.operator.to_string())),
                if v.jailed_until > head {
                    format!("<span class=\"bad\">until {}</span>", v.jailed_until)
                } else {
                    "no".into()
                },
            ]
        })
        .collect();
    body.push_str(&html::table(
        "verifiers",
        &[
            "Verifier",
            "Bond",
            "Verdicts",
            "Missed",
            "Overturned",
            "Open cases",
            "Serving models",
            "Jailed",
        ]
        .map(String::from),
        &rows,
        "No verifier has registered. One joins with `gpuchain-verifier init` and `register` (docs/verifier.md).",
    ));

    body.push_str("<h2>Open cases</h2>");
    let rows: Vec<Vec<String>> = cases
        .iter()
        .map(|c| {
            vec![
                format!("<a href=\"/leases/{0}\">lease {0}</a>", c.lease_id),
                html::addr_at("/providers", &c.provider.to_string()),
                c.round.to_string(),
                format!("{:?}", c.stage).to_lowercase(),
                c.assignee
                    .as_ref()
                    .map(html::addr)
                    .unwrap_or_else(|| "—".into()),
                html::height_link(c.deadline_height),
            ]
        })
        .collect();
    body.push_str(&html::table(
        "cases",
        &[
            "Lease",
            "Provider",
            "Round",
            "Stage",
            "Assigned to",
            "Deadline",
        ]
        .map(String::from),
        &rows,
        "No case open: every audited or disputed lease has its verdict.",
    ));

    body.push_str("<h2>Ringers in flight</h2>");
    let rows: Vec<Vec<String>> = challenges
        .iter()
        .map(|c| {
            vec![
                c.id.to_string(),
                html::addr(&c.verifier),
                html::height_link(c.height),
                html::height_link(c.expires_height),
            ]
        })
        .collect();
    body.push_str(&html::table(
        "challenges",
        &["Challenge", "Verifier", "Committed", "Expires"].map(String::from),
        &rows,
        "No planted challenge is open.",
    ));

    body.push_str("<h2>Slashes</h2>");
    let rows: Vec<Vec<String>> = slashes
        .iter()
        .rev()
        .take(100)
        .map(|s| {
            vec![
                html::height_link(s.height),
                html::addr_at("/providers", &s.subject.to_string()),
                format!("<span class=\"bad\">{}</span>", esc(s.reason.name())),
                html::gpu(s.outcome.slashed),
                html::gpu(s.outcome.burned),
            ]
        })
        .collect();
    body.push_str(&html::table(
        "slashes",
        &["Height", "Subject", "Reason", "Slashed", "Burned"].map(String::from),
        &rows,
        "Nobody has been slashed.",
    ));

    body.push_str("<h2>Verdicts, appeals, audits as they happened</h2>");
    body.push_str(&super::chain::event_table(
        "verification-events",
        &events,
        100,
        "No verification event yet.",
    ));

    Ok(Page {
        title: "Verification".into(),
        active: "/verification",
        json: json!({
            "height": head,
            "pools": snap.pools,
            "verifiers": verifiers,
            "serving_models": judged,
            "cases": cases,
            "challenges": challenges,
            "slashes": slashes,
            "events": events,
        }),
        body,
    }
    .into())
}

/// A verifier's serving models as their hashes' first 12 hex digits (the whole in a tooltip),
/// or a dash when it declared none.
fn judged_models(models: Option<&Vec<String>>) -> String {
    match models {
        Some(models) if !models.is_empty() => models
            .iter()
            .map(|m| {
                format!(
                    "<code title=\"{0}\">{1}</code>",
                    esc(m),
                    esc(m.get(..12).unwrap_or(m))
                )
            })
            .collect::<Vec<_>>()
            .join(" "),
        _ => "—".into(),
    }
}
