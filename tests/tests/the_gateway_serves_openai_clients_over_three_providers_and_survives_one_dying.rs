//! `gpuchain-gateway` in front of three `gpuchain-provider serve-model` processes (SmolLM2
//! and MiniLM) on 127.0.0.1: the official `openai` Python package works against it
//! unchanged (models, chat whole and streamed, text completion, an unknown model refused,
//! embeddings); under steady streamed load one provider is killed while it is answering and
//! every request still gets its whole, correct answer (retried or resumed on another
//! provider) and the dead provider is reported in the metrics; an answer whose provider is
//! killed after its first words is finished whole by another; bad requests get OpenAI
//! errors; and when every provider is full the client is told to retry, not made to wait.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use futures::StreamExt;
use gpuchain_tests::serving::{
    chat_stream, gateway, metric_value, serve_model, streamed_chat, Server,
};
use serde_json::{json, Value};

fn question(stream: bool, max_tokens: u32) -> Value {
    json!({"model": "smollm2", "temperature": 0, "stream": stream, "max_tokens": max_tokens,
           "messages": [{"role": "user", "content": "What is the capital of France?"}]})
}

/// A question whose greedy answer runs to the token limit, so answers are long enough to
/// be cut in the middle.
fn story() -> Value {
    json!({"model": "smollm2", "temperature": 0, "stream": true, "max_tokens": 64,
           "messages": [{"role": "user", "content": "Describe Paris in three sentences."}]})
}

/// The text of a streamed chat answer, or why it is not a whole one.
async fn streamed(http: &reqwest::Client, base: &str, body: &Value) -> Result<String, String> {
    streamed_chat(http, base, body)
        .await
        .map_err(|e| format!("{e:#}"))
}

async fn metrics(http: &reqwest::Client, base: &str) -> String {
    http.get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

fn value(metrics: &str, series: &str) -> f64 {
    metric_value(metrics, series).unwrap_or_else(|| panic!("no {series} in {metrics}"))
}

/// The interpreter of the official OpenAI client's environment (`scripts/openai-env.sh`).
fn openai_python() -> PathBuf {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/openai-env.sh");
    let out = Command::new("bash").arg(script).output().unwrap();
    assert!(
        out.status.success(),
        "scripts/openai-env.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_serves_openai_clients_over_three_providers_and_survives_one_dying() {
    let mut providers: Vec<Server> = (0..3).map(|_| serve_model(2).unwrap()).collect();
    let urls: Vec<String> = providers.iter().map(|p| p.url.clone()).collect();
    // No hedging here: on two cores a hedge doubles the load it answers to, and the load
    // below is sized to fit the slots left after a provider dies (hedging is unit-tested).
    let gw = gateway(
        &urls,
        &["--probe-interval-ms", "200", "--hedge-after-ms", "10000"],
    )
    .unwrap();
    let base = gw.url.clone();
    let http = reqwest::Client::new();

    // The official client, unchanged.
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../clients/openai/chat_check.py");
    let out = Command::new(openai_python())
        .arg(script)
        .arg(format!("{base}/v1"))
        .args(["smollm2", "minilm"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // The greedy answer every provider gives.
    let reference = streamed(&http, &base, &story()).await.unwrap();
    assert!(reference.contains("Paris"), "{reference}");

    // Steady load: three clients asking one after another, each answer streamed.
    let deadline = Instant::now() + Duration::from_secs(20);
    let clients: Vec<_> = (0..3)
        .map(|_| {
            let (http, base) = (http.clone(), base.clone());
            tokio::spawn(async move {
                let mut answers = Vec::new();
                while Instant::now() < deadline {
                    answers.push(streamed(&http, &base, &story()).await);
                }
                answers
            })
        })
        .collect();

    // Kill a provider while it is answering: the first the gateway is seen sending to (which
    // one the router picks first depends on its probes, not on the order of the list).
    let series = |u: &str| format!("gpuchain_gateway_upstream_in_flight{{upstream=\"{u}\"}}");
    let mut victim = None;
    for _ in 0..200 {
        let m = metrics(&http, &base).await;
        victim = (0..urls.len()).find(|&i| value(&m, &series(&urls[i])) >= 1.0);
        if victim.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let victim = victim.expect("the load reaches a provider");
    let others: Vec<usize> = (0..urls.len()).filter(|&i| i != victim).collect();
    tokio::time::sleep(Duration::from_millis(300)).await; // mid-answer
    providers[victim].kill();

    let mut answered = 0;
    for client in clients {
        for answer in client.await.unwrap() {
            assert_eq!(
                answer.as_deref(),
                Ok(reference.as_str()),
                "no request is lost"
            );
            answered += 1;
        }
    }
    assert!(answered >= 6, "{answered} answers under load");
    let m = metrics(&http, &base).await;
    let up = |u: &str| {
        value(
            &m,
            &format!("gpuchain_gateway_upstream_up{{upstream=\"{u}\"}}"),
        )
    };
    assert_eq!(up(&urls[victim]), 0.0, "the dead provider is reported");
    assert!(
        value(
            &m,
            &format!(
                "gpuchain_gateway_upstream_down_total{{upstream=\"{}\"}}",
                urls[victim]
            )
        ) >= 1.0
    );
    for &i in &others {
        assert_eq!(up(&urls[i]), 1.0);
    }
    assert_eq!(value(&m, "gpuchain_gateway_failed_total"), 0.0, "{m}");

    // One answer alone, its provider killed after its first words: the client still reads
    // the whole answer, finished by the last provider.
    let resumed_before = value(&m, "gpuchain_gateway_resumed_total");
    let mut alone = chat_stream(&http, &base, &story()).await.unwrap();
    alone.next_piece().await.unwrap();
    let m = metrics(&http, &base).await;
    let in_flight = |u: &str| {
        value(
            &m,
            &format!("gpuchain_gateway_upstream_in_flight{{upstream=\"{u}\"}}"),
        )
    };
    let answering = if in_flight(&urls[others[0]]) >= 1.0 {
        others[0]
    } else {
        others[1]
    };
    assert_eq!(in_flight(&urls[answering]), 1.0, "{m}");
    let cut_after = alone.text.clone();
    providers[answering].kill();
    let whole = alone.rest().await.unwrap();
    assert_eq!(whole, reference, "resumed after {cut_after:?}");
    let m = metrics(&http, &base).await;
    assert_eq!(
        value(&m, "gpuchain_gateway_resumed_total"),
        resumed_before + 1.0,
        "{m}"
    );
    let last = others[0] + others[1] - answering;

    // Bad requests: OpenAI's errors, from the gateway or passed on from the provider.
    let post = |path: &str, body: String| {
        http.post(format!("{base}{path}"))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    for (path, body, status) in [
        ("/v1/chat/completions", "{".to_string(), 400),
        ("/v1/chat/completions", json!({"messages": []}).to_string(), 400),
        ("/v1/chat/completions", json!({"model": "nope", "messages": []}).to_string(), 404),
        ("/v1/chat/completions", json!({"model": "smollm2", "messages": [{"role": "tool", "content": "x"}]}).to_string(), 400),
        ("/v1/chat/completions", json!({"model": "smollm2", "max_tokens": 100000, "messages": [{"role": "user", "content": "x"}]}).to_string(), 400),
        ("/v1/embeddings", json!({"model": "minilm", "input": []}).to_string(), 400),
    ] {
        let r = post(path, body.clone()).await.unwrap();
        assert_eq!(r.status(), status, "{body}");
        let e: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
        assert!(e["error"]["message"].is_string(), "{e}");
    }

    // Both slots of the last provider busy with a long answer (counting on: no end of turn
    // in sight): the next request is told to retry, at once.
    assert_eq!(
        value(
            &metrics(&http, &base).await,
            &format!(
                "gpuchain_gateway_upstream_up{{upstream=\"{}\"}}",
                urls[last]
            )
        ),
        1.0
    );
    let counting = json!({"model": "smollm2", "prompt": "1, 2, 3, 4, 5, 6, 7, 8, 9, 10,",
                          "max_tokens": 400, "temperature": 0, "stream": true});
    let mut long = Vec::new();
    for _ in 0..2 {
        let r = post("/v1/completions", counting.to_string()).await.unwrap();
        assert_eq!(r.status(), 200);
        let mut body = r.bytes_stream();
        body.next().await.unwrap().unwrap();
        long.push(body);
    }
    let asked = Instant::now();
    let r = post("/v1/chat/completions", question(false, 8).to_string())
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    assert!(r.headers().contains_key("retry-after"));
    assert!(asked.elapsed() < Duration::from_secs(5), "not queued");
}
