//! Ringers: requests whose right answer the client knows (greedy decoding, so every honest
//! provider answers the same text), sent now and then to every provider as ordinary requests
//! on its lease, which the provider cannot tell from the rest. A provider that answers one
//! differently is caught: it is never routed to again (nor any upstream of the same
//! provider), the ringer's receipt is left out of the acknowledgements so it is not paid,
//! and the gateway appeals every `honest` verdict standing on a claim of its leases, so
//! that a jury waving its answers through is overturned.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use axum::http::HeaderMap;
use gpuchain_agent_kit::chain::AgentChain;
use gpuchain_serving::{ClaimStage, MsgAppealServing, ServingMsg, ServingRead};
use gpuchain_tx::Msg;
use serde_json::Value;

use crate::generation::{whole_answer, Generation, Shape};
use crate::http::Gateway;
use crate::pool::Upstream;
use crate::stats::Stats;

/// One known request and its answer.
pub(crate) struct Ringer {
    model: String,
    shape: Shape,
    body: Vec<u8>,
    answer: String,
}

/// Reads a ringers file: one JSON object per line (`{"request": {…}, "answer": "…"}`, and
/// `"path"` for text completions); blank lines are skipped.
pub(crate) fn load(path: &Path) -> Result<Vec<Ringer>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut ringers = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let at = || format!("{} line {}", path.display(), n + 1);
        let line: Value = serde_json::from_str(line).with_context(at)?;
        let Some(fields) = line.as_object() else {
            bail!("{}: expected a JSON object", at());
        };
        if let Some(other) = fields
            .keys()
            .find(|k| !["path", "request", "answer"].contains(&k.as_str()))
        {
            bail!("{}: unknown field `{other}` (path, request, answer)", at());
        }
        let (Some(request), Some(answer)) = (
            fields.get("request").filter(|r| r.is_object()),
            fields.get("answer").and_then(Value::as_str),
        ) else {
            bail!(
                "{}: needs a \"request\" object and an \"answer\" text",
                at()
            );
        };
        let shape = match fields.get("path").map(Value::as_str) {
            None | Some(Some("/v1/chat/completions")) => Shape::Chat,
            Some(Some("/v1/completions")) => Shape::Text,
            Some(other) => bail!("{}: path {other:?} is not a generation route", at()),
        };
        let Some(model) = request.get("model").and_then(Value::as_str) else {
            bail!("{}: the request names no model", at());
        };
        if request.get("temperature").and_then(Value::as_f64) != Some(0.0) {
            bail!(
                "{}: only a greedy request (\"temperature\": 0) has one right answer",
                at()
            );
        }
        if request
            .get("stream")
            .is_some_and(|s| s != &Value::Bool(false))
        {
            bail!("{}: a ringer is asked whole (leave out \"stream\")", at());
        }
        ringers.push(Ringer {
            model: model.to_string(),
            shape,
            body: request.to_string().into_bytes(),
            answer: answer.to_string(),
        });
    }
    if ringers.is_empty() {
        bail!("{} holds no ringer", path.display());
    }
    Ok(ringers)
}

/// Every `every` (the first time `every` after the start, so that ringers come among
/// ordinary traffic), asks each answering, not yet caught upstream one ringer of a model it
/// serves (in turn), and appeals on the caught ones' leases.
pub(crate) async fn run(
    g: Gateway,
    ringers: Vec<Ringer>,
    every: Duration,
    chain: Option<AgentChain>,
) {
    let mut turn = 0usize;
    let mut appealed = BTreeSet::new();
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        for u in g.pool.upstreams() {
            if u.is_caught() || !u.is_up() {
                continue;
            }
            let fitting: Vec<&Ringer> = ringers.iter().filter(|r| u.serves(&r.model)).collect();
            let Some(ringer) = fitting.get(turn % fitting.len().max(1)) else {
                continue;
            };
            turn = turn.wrapping_add(1);
            ring(&g, u, ringer).await;
        }
        if let Some(chain) = &chain {
            appeal_caught(&g, chain, &mut appealed).await;
        }
    }
}

/// Asks `u` one ringer and judges its answer.
async fn ring(g: &Gateway, u: Arc<Upstream>, ringer: &Ringer) {
    let req = match Generation::parse(&ringer.body, ringer.shape, &HeaderMap::new(), g.hedge_after)
    {
        Ok(r) => r,
        Err(why) => {
            tracing::error!(%why, "a ringer is not a valid request");
            return;
        }
    };
    let answer = match whole_answer(g, u.clone(), &req).await {
        Ok(a) => a,
        // Down, full or broken off: the pool routes around that as for any request.
        Err(why) => {
            tracing::debug!(upstream = %u.spec.url, %why, "ringer not answered");
            return;
        }
    };
    if answer.text == ringer.answer {
        answer.keep_receipt(g, &u, &req);
        Stats::add(&g.stats.ringers_passed, 1);
        tracing::debug!(upstream = %u.spec.url, "ringer answered right");
        return;
    }
    Stats::add(&g.stats.ringers_failed, 1);
    g.pool.catch(&u);
    tracing::warn!(
        upstream = %u.spec.url,
        provider = ?u.spec.provider.as_ref().map(|a| a.to_string()),
        lease = ?u.spec.lease,
        expected = %ringer.answer,
        got = %answer.text,
        "ringer answered wrong: provider caught, no longer routed to, that answer not \
         acknowledged"
    );
}

/// Appeals each `honest` verdict standing on a claim of a caught upstream's lease, once.
async fn appeal_caught(g: &Gateway, chain: &AgentChain, appealed: &mut BTreeSet<u64>) {
    let caught: Vec<u64> = g
        .pool
        .upstreams()
        .iter()
        .filter(|u| u.is_caught())
        .filter_map(|u| u.spec.lease)
        .collect();
    if caught.is_empty() {
        return;
    }
    let claims = match chain
        .client
        .snapshot(gpuchain_serving::state_key::claims_prefix())
        .await
    {
        Ok(state) => state.serving_claims(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the serving claims");
            return;
        }
    };
    for claim in claims {
        let standing_honest = matches!(claim.stage, ClaimStage::Standing { honest: true, .. });
        if !standing_honest || !caught.contains(&claim.lease_id) || !appealed.insert(claim.id) {
            continue;
        }
        let msg = Msg::Serving(ServingMsg::Appeal(MsgAppealServing { claim_id: claim.id }));
        match chain.submit(msg).await {
            Ok(o) if o.code == 0 => tracing::warn!(
                claim_id = claim.id,
                lease_id = claim.lease_id,
                "appealed an honest verdict on a caught provider's claim"
            ),
            Ok(o) => {
                tracing::warn!(claim_id = claim.id, code = o.code, log = %o.log, "appeal refused")
            }
            Err(e) => tracing::warn!(claim_id = claim.id, error = %e, "appeal not sent"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(name: &str, text: &str) -> Result<Vec<Ringer>> {
        let path = std::env::temp_dir().join(format!(
            "gpuchain-ringers-{}-{name}.jsonl",
            std::process::id()
        ));
        std::fs::write(&path, text).unwrap();
        let loaded = load(&path);
        let _ = std::fs::remove_file(&path);
        loaded
    }

    #[test]
    fn a_ringers_file_holds_greedy_requests_with_their_answers_and_nothing_else() {
        let good = concat!(
            r#"{"request": {"model": "smollm2", "temperature": 0, "messages": []}, "answer": "Blue."}"#,
            "\n\n",
            r#"{"path": "/v1/completions", "request": {"model": "smollm2", "temperature": 0.0, "prompt": "The sky is"}, "answer": " blue"}"#,
            "\n"
        );
        let ringers = load_text("good", good).unwrap();
        assert_eq!(ringers.len(), 2);
        assert_eq!(ringers[0].shape, Shape::Chat);
        assert_eq!(ringers[1].shape, Shape::Text);
        assert_eq!(ringers[1].answer, " blue");
        assert_eq!(ringers[0].model, "smollm2");
        for (name, bad, why) in [
            ("empty", "\n", "holds no ringer"),
            ("json", "{not json", "line 1"),
            (
                "sampled",
                r#"{"request": {"model": "m", "temperature": 0.7}, "answer": "x"}"#,
                "greedy",
            ),
            (
                "unnamed",
                r#"{"request": {"temperature": 0}, "answer": "x"}"#,
                "no model",
            ),
            (
                "streamed",
                r#"{"request": {"model": "m", "temperature": 0, "stream": true}, "answer": "x"}"#,
                "stream",
            ),
            (
                "route",
                r#"{"path": "/v1/embeddings", "request": {"model": "m", "temperature": 0}, "answer": "x"}"#,
                "not a generation route",
            ),
            (
                "field",
                r#"{"request": {"model": "m", "temperature": 0}, "answer": "x", "weight": 2}"#,
                "unknown field `weight`",
            ),
            (
                "answerless",
                r#"{"request": {"model": "m", "temperature": 0}}"#,
                "answer",
            ),
        ] {
            let err = load_text(name, bad).err().map(|e| format!("{e:#}"));
            assert!(
                err.as_deref().is_some_and(|e| e.contains(why)),
                "{name}: {err:?}"
            );
        }
    }
}
