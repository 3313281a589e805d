//! The demo's serving stage, on chain leases: each provider keeps SmolLM2 and MiniLM loaded
//! behind its own OpenAI endpoint (`gpuchain-provider serve-model`) and its agent bids on
//! serving orders with that endpoint; the client's `gpuchain-gateway` opens a chat order and
//! an embeddings order on the three, finds the leases and their endpoints on chain and routes
//! over them, signing every request and keeping every receipt. The client asks a question
//! and embeds sentences through the gateway (and runs the official `openai` Python package
//! against it when its environment is given); one provider's endpoint is killed in the middle
//! of a streamed answer, the gateway finishes the answer on another provider and reports the
//! lease; the endpoint restarts and its agent answers the report, keeping the lease. The
//! gateway acknowledges the receipts, the providers claim them, the verifier audits the
//! claims, the providers are paid; stopping the gateway ends both orders and the rest of the
//! deposits comes back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use gpuchain_serving::{ServingLeaseState, ServingOrderState, ServingRead};
use serde::Serialize;
use serde_json::{json, Value};

use super::{wait_until, Market, ServingSetup, PROVIDERS};
use crate::serving::{
    chat_stream, gateway_logged, metric_value, serve_both_on_leases, streamed_chat, Server,
};

/// What the serving stage showed.
#[derive(Clone, Debug, Serialize)]
pub struct ServingReport {
    /// The gateway's OpenAI base URL.
    pub gateway: String,
    /// SmolLM2's answer to the capital question, through the gateway.
    pub answer: String,
    /// Dimensions of the embeddings the gateway returned.
    pub embedding_dims: usize,
    /// What the official `openai` client reported (`clients/openai/chat_check.py`), if run.
    pub openai_client: Option<Value>,
    /// The provider whose endpoint was killed mid-answer.
    pub killed: String,
    /// Text the client had when the endpoint was killed.
    pub text_before_kill: String,
    /// The answer streamed across the kill equals the same question's answer asked whole.
    pub resumed_answer_whole: bool,
    /// Answers the gateway resumed on another provider.
    pub resumed: f64,
    /// The killed provider answered the gateway's report in time and kept its leases.
    pub killed_kept_leases: bool,
    /// Every serving lease once its receipts were settled.
    pub leases: Vec<ServedLease>,
    /// Left in serving escrow once both orders closed, ugpu (0: every deposit paid out or
    /// refunded).
    pub escrow_after: u128,
}

/// One serving lease, settled.
#[derive(Clone, Debug, Serialize)]
pub struct ServedLease {
    /// Lease id.
    pub id: u64,
    /// Provider name.
    pub provider: String,
    /// Model served.
    pub model: String,
    /// Requests acknowledged by the client and claimed.
    pub requests: u64,
    /// Tokens (chat) or inputs (embeddings) claimed.
    pub units: u128,
    /// Paid to the provider, ugpu.
    pub paid: u128,
    /// `serving`, `dropped` or `closed`.
    pub state: String,
}

const STORY: &str = "Describe Paris in three sentences.";

fn chat(question: &str, stream: bool) -> Value {
    json!({"model": "smollm2", "temperature": 0, "stream": stream, "max_tokens": 96,
           "messages": [{"role": "user", "content": question}]})
}

/// `name`'s endpoint, serving both models on its leases.
fn endpoint(m: &Market, setup: &ServingSetup, i: usize, log: &Path) -> Result<Server> {
    let (name, _) = PROVIDERS[i];
    let operator = m.address(name)?.to_string();
    let receipts = m.dir.join(name).join("serving-receipts");
    serve_both_on_leases(
        &setup.model,
        &setup.embedder,
        setup.ports[i],
        (&receipts, &m.node, &operator),
        log,
    )
}

/// x/serving's state now.
async fn serving_state(m: &Market) -> Result<gpuchain_types::MemState> {
    m.chain
        .snapshot(gpuchain_serving::state_key::module_prefix())
        .await
}

/// The provider name of an address.
fn provider_name(m: &Market, address: &gpuchain_types::Address) -> String {
    PROVIDERS
        .iter()
        .find(|(n, _)| m.address(n).is_ok_and(|a| a == *address))
        .map_or_else(|| address.to_string(), |(n, _)| n.to_string())
}

/// Runs the stage; `openai_python` is the interpreter of an environment with the official
/// client.
pub(crate) async fn serve(
    m: &Market,
    openai_python: Option<&PathBuf>,
    say: &(dyn Fn(&str) + Sync),
) -> Result<ServingReport> {
    let setup = m.serving.as_ref().context("serving was not set up")?;
    say(
        "serving: each provider keeps SmolLM2 and MiniLM loaded behind its own OpenAI endpoint, \
         and its agent bids on serving orders with that endpoint \
         (logs: <name>-serve-model.log, gateway.log)",
    );
    let mut servers = Vec::new();
    for (i, (name, _)) in PROVIDERS.iter().enumerate() {
        let log = m.net.logs_dir().join(format!("{name}-serve-model.log"));
        let server = endpoint(m, setup, i, &log)?;
        say(&format!("  {name}: {}/v1", server.url));
        servers.push((*name, server));
    }
    let deposit = 20 * super::GPU;
    let orders = [
        format!(
            "model=smollm2,hash={},providers=3,max-price=1000000,blocks=3000,bid-window=5,\
             deposit={deposit}",
            setup.model_hash
        ),
        format!(
            "model=minilm,hash={},kind=embedding,providers=3,max-price=10000,blocks=3000,\
             bid-window=5,deposit={deposit}",
            setup.embedder_hash
        ),
    ];
    let keys = m.net.keys_home();
    let receipts = m.dir.join("client-receipts");
    let (keys, receipts) = (keys.to_string_lossy(), receipts.to_string_lossy());
    let mut gw = gateway_logged(
        &[],
        &[
            "--node",
            m.node.as_str(),
            "--home",
            &keys,
            "--key",
            "client",
            "--receipts",
            &receipts,
            "--probe-interval-ms",
            "200",
            "--ack-every",
            "4",
            "--ack-after-ms",
            "1000",
            "--open",
            &orders[0],
            "--open",
            &orders[1],
        ],
        Some(&m.net.logs_dir().join("gateway.log")),
    )?;
    let state = serving_state(m).await?;
    say(&format!(
        "the client's gateway opened a SmolLM2 chat order and a MiniLM embeddings order on \
         three providers ({} GPU deposit each); every provider still eligible bid, and the \
         gateway routes over the leases they won:",
        deposit / super::GPU
    ));
    for lease in state.serving_leases() {
        say(&format!(
            "  lease {}: {} serves {} at {} ugpu per {} at {}",
            lease.id,
            provider_name(m, &lease.provider),
            lease.model.name,
            lease.price,
            if lease.model.name == "minilm" {
                "thousand inputs"
            } else {
                "million tokens"
            },
            lease.endpoint
        ));
    }
    let base = gw.url.clone();
    say(&format!(
        "the client's gateway serves the OpenAI API on {base}/v1, routing over the leases by \
         time to first token, load and on-chain reputation"
    ));
    let http = reqwest::Client::new();

    let answer = streamed_chat(&http, &base, &chat("What is the capital of France?", true)).await?;
    say(&format!("asked through the gateway, streamed: {answer:?}"));
    let embedded: Value = serde_json::from_str(
        &http
            .post(format!("{base}/v1/embeddings"))
            .header("content-type", "application/json")
            .body(
                json!({"model": "minilm", "input": ["GPUs for rent", "a market for compute"]})
                    .to_string(),
            )
            .send()
            .await?
            .text()
            .await?,
    )?;
    let embedding_dims = embedded["data"][0]["embedding"]
        .as_array()
        .map_or(0, Vec::len);
    say(&format!(
        "embedded two sentences through the gateway: {embedding_dims} dimensions each"
    ));

    let openai_client = match openai_python {
        Some(python) => {
            let script =
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../clients/openai/chat_check.py");
            let out = Command::new(python)
                .arg(script)
                .arg(format!("{base}/v1"))
                .args(["smollm2", "minilm"])
                .output()
                .context("running the official openai client")?;
            anyhow::ensure!(
                out.status.success(),
                "the official openai client failed against the gateway: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let report: Value = serde_json::from_slice(&out.stdout)?;
            say(&format!(
                "the official openai Python package (unchanged) against the gateway: {report}"
            ));
            Some(report)
        }
        None => None,
    };

    // A provider dies in the middle of an answer.
    let reference = streamed_chat(&http, &base, &chat(STORY, true)).await?;
    let mut stream = chat_stream(&http, &base, &chat(STORY, true)).await?;
    stream.next_piece().await?;
    let metrics = http
        .get(format!("{base}/metrics"))
        .send()
        .await?
        .text()
        .await?;
    let (index, _) = servers
        .iter()
        .enumerate()
        .find(|(_, (_, s))| {
            let series = format!(
                "gpuchain_gateway_upstream_in_flight{{upstream=\"{}\",model=\"smollm2\"}}",
                s.url
            );
            metric_value(&metrics, &series).unwrap_or(0.0) >= 1.0
        })
        .context("no provider is answering the streamed question")?;
    let text_before_kill = stream.text.clone();
    let killed = servers[index].0.to_string();
    servers[index].1.kill();
    say(&format!(
        "killed {killed}'s endpoint mid-answer, after {:?}",
        text_before_kill
    ));
    let whole = stream.rest().await?;
    let resumed_answer_whole = whole == reference;
    let metrics = http
        .get(format!("{base}/metrics"))
        .send()
        .await?
        .text()
        .await?;
    let resumed = metric_value(&metrics, "gpuchain_gateway_resumed_total").unwrap_or(0.0);
    say(&format!(
        "the gateway finished the answer on another provider ({}): {whole:?}",
        if resumed_answer_whole {
            "the same text as asked whole"
        } else {
            "DIFFERENT from the answer asked whole"
        }
    ));

    // The gateway reports the dead endpoint's leases on chain; the endpoint restarts and its
    // agent answers each report with a heartbeat, so the provider keeps its leases.
    let killed_address = m.address(&killed)?;
    let reported = |state: &gpuchain_types::MemState| {
        state
            .serving_leases()
            .into_iter()
            .filter(|l| l.provider == killed_address && l.report_deadline.is_some())
            .count()
    };
    wait_until(
        Duration::from_secs(60),
        "the gateway's report of the dead endpoint",
        || async {
            let state = serving_state(m).await?;
            Ok(reported(&state) > 0)
        },
    )
    .await?;
    say(&format!(
        "the gateway reported {killed}'s leases on chain as unresponsive; {killed} restarts its endpoint"
    ));
    let log = m
        .net
        .logs_dir()
        .join(format!("{killed}-serve-model-restarted.log"));
    servers[index].1 = endpoint(m, setup, index, &log)?;
    wait_until(
        Duration::from_secs(90),
        "the heartbeats of the restarted endpoint",
        || async {
            let state = serving_state(m).await?;
            Ok(reported(&state) == 0)
        },
    )
    .await?;
    let state = serving_state(m).await?;
    let killed_kept_leases = state
        .serving_leases()
        .iter()
        .filter(|l| l.provider == killed_address)
        .all(|l| l.state == ServingLeaseState::Serving);
    say(&format!(
        "{killed}'s agent answered the reports with heartbeats: {}",
        if killed_kept_leases {
            "it keeps its leases"
        } else {
            "too late, it LOST a lease"
        }
    ));

    // Every answer the gateway kept a receipt for is acknowledged, claimed, audited and paid.
    let acked = wait_acknowledged(&m.dir.join("client-receipts")).await?;
    say(&format!(
        "the gateway acknowledged {} answers in signed batches; the providers claim them and \
         the verifier audits every claim (teacher-forced re-check of a drawn answer)",
        acked.values().sum::<u64>()
    ));
    wait_until(
        Duration::from_secs(300),
        "every acknowledged batch to be paid",
        || async {
            let state = serving_state(m).await?;
            let open = !state.serving_claims().is_empty();
            let claimed = acked
                .iter()
                .all(|(id, end)| state.serving_lease(*id).is_some_and(|l| l.next_seq >= *end));
            Ok(claimed && !open)
        },
    )
    .await?;

    // Stopping the gateway ends both orders; after the claim grace the deposits' rest is back.
    anyhow::ensure!(gw.terminate()?, "the gateway did not stop cleanly");
    wait_until(
        Duration::from_secs(120),
        "both serving orders to close",
        || async {
            let state = serving_state(m).await?;
            let orders = state.serving_orders();
            Ok(!orders.is_empty() && orders.iter().all(|o| o.state == ServingOrderState::Closed))
        },
    )
    .await?;
    let state = serving_state(m).await?;
    let leases: Vec<ServedLease> = state
        .serving_leases()
        .into_iter()
        .map(|l| ServedLease {
            id: l.id,
            provider: provider_name(m, &l.provider),
            model: l.model.name.clone(),
            requests: l.next_seq,
            units: l.units,
            paid: l.paid,
            state: format!("{:?}", l.state).to_lowercase(),
        })
        .collect();
    for l in &leases {
        say(&format!(
            "  lease {} ({} serving {}): {} requests, {} {} claimed, paid {} ugpu",
            l.id,
            l.provider,
            l.model,
            l.requests,
            l.units,
            if l.model == "minilm" {
                "inputs"
            } else {
                "tokens"
            },
            l.paid
        ));
    }
    let escrow_after = m
        .chain
        .balance(&gpuchain_serving::module_account::serving_escrow())
        .await?;
    say(&format!(
        "the gateway stopped and ended both orders; serving escrow holds {escrow_after} ugpu \
         after they closed (the rest of the deposits went back to the client)"
    ));
    drop(servers);

    Ok(ServingReport {
        gateway: format!("{base}/v1"),
        answer,
        embedding_dims,
        openai_client,
        killed,
        text_before_kill,
        resumed_answer_whole,
        resumed,
        killed_kept_leases,
        leases,
        escrow_after,
    })
}

/// Waits until the gateway has acknowledged every receipt it kept under `dir` (no kept
/// receipt above its lease's last acknowledged number); each lease's acknowledged end.
async fn wait_acknowledged(dir: &Path) -> Result<BTreeMap<u64, u64>> {
    let mut ends = BTreeMap::new();
    wait_until(
        Duration::from_secs(60),
        "the gateway to acknowledge every receipt",
        || {
            ends.clear();
            let mut all = true;
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let name = entry.file_name().to_string_lossy().to_string();
                let Some(id) = name
                    .strip_prefix("lease-")
                    .and_then(|i| i.parse::<u64>().ok())
                else {
                    continue;
                };
                let mut kept = 0u64;
                for f in std::fs::read_dir(entry.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                {
                    let f = f.file_name().to_string_lossy().to_string();
                    if let Some(seq) = f
                        .strip_suffix(".receipt.json")
                        .and_then(|s| s.parse::<u64>().ok())
                    {
                        kept = kept.max(seq + 1);
                    }
                }
                let end = std::fs::read_dir(entry.path().join("acks"))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter_map(|a| std::fs::read(a.path()).ok())
                    .filter_map(|b| serde_json::from_slice::<Value>(&b).ok())
                    .filter_map(|v| v["signed"]["ack"]["end_seq"].as_u64())
                    .max()
                    .unwrap_or(0);
                all &= end >= kept;
                ends.insert(id, end);
            }
            let done = all && !ends.is_empty();
            async move { Ok(done) }
        },
    )
    .await?;
    Ok(ends)
}
