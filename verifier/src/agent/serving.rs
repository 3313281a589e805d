//! Judging audited serving receipts: when drawn (`serving.juror`), read the revealed request
//! and answer from the claim, re-check the answer on the named model off the async runtime
//! (a generated answer by teacher forcing, `compute::serving::audit_answer`; embeddings by
//! re-embedding within tolerance) and post `honest` or `faulty` before the deadline.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Context, Result};
use gpuchain_compute::embed::Embedder;
use gpuchain_compute::serving::{audit_answer, ChatModel};
use gpuchain_serving::{
    ClaimStage, ModelRef, MsgServingRecuse, MsgServingVerdict, ServingKind, ServingMsg,
};
use gpuchain_tx::Msg;

use super::{Agent, Done};
use crate::config::ServingAuditConfig;
use crate::one_thread::on_one_thread;

/// Least cosine similarity between a served embedding and the verifier's own: MiniLM on two
/// CPU backends agrees far closer; another model or a truncated input does not come near.
const MIN_COSINE: f64 = 0.999;

/// Models loaded for audits, by the blake3 of their weights (what a verifier declares and a
/// claim names): chat models and embedders.
#[derive(Default, Clone)]
pub(crate) struct Loaded {
    chat: Arc<Mutex<BTreeMap<String, Arc<ChatModel>>>>,
    embedders: Arc<Mutex<BTreeMap<String, Arc<Embedder>>>>,
}

impl Loaded {
    /// The embedder configured as `entry`, read from disk the first time only.
    fn embedder(&self, entry: &crate::config::AuditedModel) -> Result<Arc<Embedder>> {
        let mut cache = self
            .embedders
            .lock()
            .map_err(|_| anyhow!("embedder cache poisoned"))?;
        if let Some(e) = cache.get(&entry.blake3.to_ascii_lowercase()) {
            return Ok(e.clone());
        }
        let read =
            |f: &str| std::fs::read(entry.path.join(f)).with_context(|| format!("reading {f}"));
        let embedder = Arc::new(Embedder::new(
            &read("model.safetensors")?,
            &read("tokenizer.json")?,
        )?);
        cache.insert(entry.blake3.to_ascii_lowercase(), embedder.clone());
        Ok(embedder)
    }
}

fn find<'a>(
    list: &'a [crate::config::AuditedModel],
    model: &ModelRef,
) -> Result<&'a crate::config::AuditedModel> {
    // By its weights, as the verifier declared it: the name is the client's label.
    let hash = hex::encode(model.blake3);
    list.iter()
        .find(|m| m.blake3.eq_ignore_ascii_case(&hash))
        .ok_or_else(|| {
            anyhow!(
                "model {} ({hash}) is not configured under [serving]: this verifier cannot judge it",
                model.name
            )
        })
}

/// Whether the revealed answer is what the model gives.
fn judge(
    config: &ServingAuditConfig,
    loaded: &Loaded,
    model: &ModelRef,
    request: &[u8],
    response: &[u8],
    units: u64,
) -> Result<bool> {
    match model.kind {
        ServingKind::Generation => {
            let entry = find(&config.models, model)?;
            let chat = {
                let mut cache = loaded
                    .chat
                    .lock()
                    .map_err(|_| anyhow!("model cache poisoned"))?;
                let key = entry.blake3.to_ascii_lowercase();
                match cache.get(&key) {
                    Some(m) => m.clone(),
                    None => {
                        let m = Arc::new(ChatModel::load(&entry.path, entry.name.clone())?);
                        cache.insert(key, m.clone());
                        m
                    }
                }
            };
            match audit_answer(&chat, request, response, units) {
                Ok(()) => Ok(true),
                Err(why) => {
                    tracing::warn!(%why, "served answer fails its audit");
                    Ok(false)
                }
            }
        }
        ServingKind::Embedding => {
            let entry = find(&config.embedders, model)?;
            let embedder = loaded.embedder(entry)?;
            judge_embeddings(&embedder, request, response, units)
        }
    }
}

fn judge_embeddings(
    embedder: &Embedder,
    request: &[u8],
    response: &[u8],
    units: u64,
) -> Result<bool> {
    // A request the model cannot take has no answer an honest endpoint would have served
    // and been acknowledged for: faulty, not a receipt this verifier cannot judge.
    let Ok(request) = serde_json::from_slice::<serde_json::Value>(request) else {
        return Ok(false);
    };
    let inputs: Vec<String> = match request.get("input") {
        Some(serde_json::Value::String(s)) => vec![s.clone()],
        Some(v) => match serde_json::from_value(v.clone()) {
            Ok(inputs) => inputs,
            Err(_) => return Ok(false),
        },
        None => return Ok(false),
    };
    if inputs.len() as u64 != units {
        return Ok(false);
    }
    let Ok(answer) = serde_json::from_slice::<serde_json::Value>(response) else {
        return Ok(false);
    };
    let served: Vec<Vec<f64>> = answer["data"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| serde_json::from_value(i["embedding"].clone()).ok())
                .collect()
        })
        .unwrap_or_default();
    let (mine, _) = embedder.embed(&inputs, 32)?;
    let hidden = embedder.hidden();
    if served.len() != inputs.len() || mine.len() != inputs.len() * hidden {
        return Ok(false);
    }
    Ok(mine.chunks(hidden).zip(&served).all(|(a, b)| {
        let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * y).sum();
        let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
        let nb: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
        b.len() == hidden && na > 0.0 && nb > 0.0 && dot / (na * nb) >= MIN_COSINE
    }))
}

impl Agent {
    /// Drawn to judge `claim_id`: reads it and checks it in the background.
    pub(super) async fn drawn_for_claim(&mut self, claim_id: u64) {
        let read = async {
            let Some(claim) = self.chain.serving_claim(claim_id).await? else {
                anyhow::bail!("the claim is gone");
            };
            let Some(lease) = self.chain.serving_lease(claim.lease_id).await? else {
                anyhow::bail!("the lease is gone");
            };
            Ok::<_, anyhow::Error>((claim, lease))
        };
        let (claim, lease) = match read.await {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(claim_id, error = %format!("{e:#}"), "cannot read a drawn claim");
                return;
            }
        };
        let ClaimStage::Judging(judgement) = claim.stage else {
            return;
        };
        if self.rubber_stamp {
            // The lazy test mode: `honest` with nothing run (slashable when appealed).
            let _ = self.done_tx.send(Done::Judged(claim_id, Ok(true))).await;
            return;
        }
        let (config, loaded, tx) = (
            self.config.serving.clone(),
            self.serving_models.clone(),
            self.done_tx.clone(),
        );
        tokio::spawn(async move {
            let found = on_one_thread(move || {
                judge(
                    &config,
                    &loaded,
                    &lease.model,
                    &judgement.request,
                    &judgement.response,
                    judgement.receipt.units,
                )
            })
            .await
            .map_err(|e| anyhow!("audit task: {e}"))
            .and_then(|r| r);
            let _ = tx
                .send(Done::Judged(claim_id, found.map_err(|e| format!("{e:#}"))))
                .await;
        });
    }

    /// Posts the verdict of a finished audit.
    pub(super) async fn judged(
        &mut self,
        claim_id: u64,
        found: Result<bool, String>,
    ) -> Result<()> {
        // A receipt this verifier cannot judge (a model it does not run, or one it could not
        // load) is stepped down from rather than left to its deadline, which slashes.
        let (msg, what) = match found {
            Ok(honest) => (
                ServingMsg::Verdict(MsgServingVerdict { claim_id, honest }),
                if honest { "honest" } else { "faulty" },
            ),
            Err(why) => {
                tracing::error!(claim_id, %why, "cannot judge a drawn serving audit: recusing");
                (ServingMsg::Recuse(MsgServingRecuse { claim_id }), "recused")
            }
        };
        match self.chain.submit(Msg::Serving(msg)).await {
            Ok(o) if o.code == 0 => {
                tracing::info!(claim_id, verdict = what, "serving verdict posted");
            }
            Ok(o) => {
                tracing::warn!(claim_id, code = o.code, log = %o.log, "serving verdict refused")
            }
            Err(e) => tracing::warn!(claim_id, error = %e, "serving verdict not sent"),
        }
        Ok(())
    }
}
