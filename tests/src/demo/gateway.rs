//! The demo's serving stage: each provider keeps SmolLM2 and MiniLM loaded behind its own
//! OpenAI endpoint (`gpuchain-provider serve-model`), and the client's `gpuchain-gateway`
//! routes over the three, weighing their on-chain reputation from the market just run. The
//! client asks a question and embeds sentences through the gateway (and runs the official
//! `openai` Python package against it when its environment is given), then one provider's
//! endpoint is killed in the middle of a streamed answer and the gateway finishes that
//! answer on another provider.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::{json, Value};

use super::{Market, PROVIDERS};
use crate::serving::{chat_stream, gateway_logged, metric_value, serve_model_with, streamed_chat};

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
}

const STORY: &str = "Describe Paris in three sentences.";

fn chat(question: &str, stream: bool) -> Value {
    json!({"model": "smollm2", "temperature": 0, "stream": stream, "max_tokens": 96,
           "messages": [{"role": "user", "content": question}]})
}

/// Runs the stage; `openai_python` is the interpreter of an environment with the official
/// client.
pub(crate) async fn serve(
    m: &Market,
    model: &Path,
    embedder: &Path,
    openai_python: Option<&PathBuf>,
    say: &(dyn Fn(&str) + Sync),
) -> Result<ServingReport> {
    say(
        "serving: each provider keeps SmolLM2 and MiniLM loaded behind its own OpenAI endpoint \
         (logs: <name>-serve-model.log, gateway.log)",
    );
    let mut servers = Vec::new();
    let mut upstreams = Vec::new();
    for (name, price) in PROVIDERS {
        let log = m.net.logs_dir().join(format!("{name}-serve-model.log"));
        let server = serve_model_with(model, embedder, 2, Some(&log))?;
        let address = m.address(name)?;
        say(&format!("  {name}: {}/v1", server.url));
        upstreams.push(format!("{},provider={address},price={price}", server.url));
        servers.push((name, server));
    }
    let gw = gateway_logged(
        &upstreams,
        &["--node", m.node.as_str(), "--probe-interval-ms", "200"],
        Some(&m.net.logs_dir().join("gateway.log")),
    )?;
    let base = gw.url.clone();
    say(&format!(
        "the client's gateway serves the OpenAI API on {base}/v1, routing over the three by \
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
                "gpuchain_gateway_upstream_in_flight{{upstream=\"{}\"}}",
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
    Ok(ServingReport {
        gateway: format!("{base}/v1"),
        answer,
        embedding_dims,
        openai_client,
        killed,
        text_before_kill,
        resumed_answer_whole,
        resumed,
    })
}
