//! `gpuchain-provider serve-model` on 127.0.0.1 with SmolLM2 and MiniLM: the OpenAI chat
//! completion API answers, streamed and not (the same greedy text both ways), embeddings
//! equal an embedding job's, the model list names both, bad requests are turned
//! away with OpenAI-shaped errors, and the server answers 429 with Retry-After when its
//! one generation slot is busy rather than making the request wait, with Prometheus metrics
//! of all of it; models offered beyond the first load when asked for and the idle one is
//! unloaded under a memory budget; and the official `openai` Python package (pinned in
//! clients/openai/requirements.txt) works against it unchanged.
//!
//! Needs the checkpoint (fetched with `scripts/fetch-smollm2.sh` when absent).

#[path = "../../compute/tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use futures::StreamExt;
use serde_json::{json, Value};

/// The server process, killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `serve-model` on a free port with SmolLM2 as `smollm2`, and `options` before the model.
fn serve_smollm2(options: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpuchain-provider"));
    cmd.args([
        "serve-model",
        "--listen",
        "127.0.0.1:0",
        "--name",
        "smollm2",
    ])
    .args(options)
    .arg("--model")
    .arg(common::smollm2_file());
    cmd
}

/// POSTs `body` to `url` as JSON, the text as given (so that malformed bodies can be sent).
fn post_json(
    http: &reqwest::Client,
    url: String,
    body: String,
) -> impl std::future::Future<Output = reqwest::Result<reqwest::Response>> {
    http.post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
}

/// Asks `base` one greedy chat question of at most `max_tokens` tokens; the answer's text
/// (the request must succeed).
async fn greedy_answer(
    http: &reqwest::Client,
    base: &str,
    question: &str,
    max_tokens: u32,
) -> String {
    let body = json!({"model": "smollm2", "temperature": 0, "max_tokens": max_tokens,
                      "messages": [{"role": "user", "content": question}]});
    let r = post_json(
        http,
        format!("{base}/v1/chat/completions"),
        body.to_string(),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    let answer: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    answer["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

fn start() -> (Server, String) {
    let mut cmd = serve_smollm2(&["--max-concurrent", "1"]);
    cmd.args(["--embedder-name", "minilm", "--embedder"])
        .arg(common::minilm_dir());
    spawn(cmd)
}

fn spawn(mut cmd: Command) -> (Server, String) {
    let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    (Server(child), format!("http://{addr}"))
}

fn question(stream: bool, max_tokens: u32) -> Value {
    json!({"model": "smollm2", "temperature": 0, "stream": stream, "max_tokens": max_tokens,
           "messages": [{"role": "user", "content": "What is the capital of France?"}]})
}

#[tokio::test]
async fn the_openai_chat_api_answers_streams_and_turns_away_what_it_cannot_serve() {
    let (_server, base) = start();
    let http = reqwest::Client::new();
    let post = |body: String| post_json(&http, format!("{base}/v1/chat/completions"), body);

    let models: Value =
        serde_json::from_str(&get_text(&http, &format!("{base}/v1/models")).await).unwrap();
    assert_eq!(models["data"][0]["id"], "smollm2");
    assert_eq!(models["data"][1]["id"], "minilm");

    let r = post(question(false, 48).to_string()).await.unwrap();
    assert_eq!(r.status(), 200);
    let answer: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    let text = answer["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("Paris"), "{answer}");
    assert_eq!(
        answer["choices"][0]["finish_reason"], "stop",
        "ends at end of turn"
    );
    assert!(answer["usage"]["prompt_tokens"].as_u64().unwrap() > 10);

    // Streamed: the same text, chunk by chunk, then a finish reason and [DONE].
    let r = post(question(true, 48).to_string()).await.unwrap();
    assert_eq!(r.status(), 200);
    let body = r.text().await.unwrap();
    let data: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(data.last(), Some(&"[DONE]"));
    let chunks: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(chunks.len() > 3, "the answer comes in pieces: {body}");
    let streamed: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(streamed, text);
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "stop"
    );
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));

    // Streamed with usage asked for: one more chunk, with the counts and no choices.
    let mut with_usage = question(true, 48);
    with_usage["stream_options"] = json!({"include_usage": true});
    let body = post(with_usage.to_string())
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let data: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(data.last(), Some(&"[DONE]"));
    let last: Value = serde_json::from_str(data[data.len() - 2]).unwrap();
    assert_eq!(last["choices"], json!([]));
    assert_eq!(
        last["usage"]["completion_tokens"],
        answer["usage"]["completion_tokens"]
    );
    let finish: Value = serde_json::from_str(data[data.len() - 3]).unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");

    // Bad requests: an OpenAI error body and a 4xx status, and the server goes on.
    let mut unknown = question(false, 8);
    unknown["model"] = json!("gpt-4");
    let mut too_long = question(false, 8);
    too_long["max_tokens"] = json!(1_000_000);
    let mut tool = question(false, 8);
    tool["messages"][0]["role"] = json!("tool");
    for (body, status) in [
        ("{not json".to_string(), 400),
        (unknown.to_string(), 404),
        (too_long.to_string(), 400),
        (tool.to_string(), 400),
        (json!({"model": "smollm2", "messages": []}).to_string(), 400),
    ] {
        let r = post(body.clone()).await.unwrap();
        assert_eq!(r.status(), status, "{body}");
        let e: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
        assert!(
            e["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{body}"
        );
    }

    // Text completions: the prompt read as plain text and continued, whole or streamed.
    let complete =
        |body: Value| post_json(&http, format!("{base}/v1/completions"), body.to_string());
    let prompt = json!({"model": "smollm2", "prompt": "The capital of France is",
                        "temperature": 0, "max_tokens": 8});
    let r = complete(prompt.clone()).await.unwrap();
    assert_eq!(r.status(), 200);
    let c: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(c["object"], "text_completion");
    let completed = c["choices"][0]["text"].as_str().unwrap().to_string();
    assert!(completed.contains("Paris"), "{c}");
    assert!(c["usage"]["completion_tokens"].as_u64().unwrap() <= 8);
    let mut streamed_prompt = prompt.clone();
    streamed_prompt["stream"] = json!(true);
    let body = complete(streamed_prompt)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let pieces: String = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str::<Value>(d).unwrap())
        .filter_map(|c| c["choices"][0]["text"].as_str().map(str::to_string))
        .collect();
    assert_eq!(pieces, completed, "{body}");
    let r = complete(json!({"model": "smollm2", "prompt": ""}))
        .await
        .unwrap();
    assert_eq!(r.status(), 400);

    // Embeddings: the same vectors as an embedding job's, as floats or base64.
    let sentences = [
        "The cat sat on the mat.",
        "A cat is sitting on a rug.",
        "Stock markets fell today.",
    ];
    let embed = |body: Value| post_json(&http, format!("{base}/v1/embeddings"), body.to_string());
    let r = embed(json!({"model": "minilm", "input": sentences}))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let e: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    let vectors: Vec<Vec<f32>> = e["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            d["embedding"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect()
        })
        .collect();
    let dir = common::minilm_dir();
    let params = gpuchain_compute::params::Params::from_safetensors(
        &std::fs::read(dir.join("model.safetensors")).unwrap(),
    )
    .unwrap();
    let tok = gpuchain_compute::embed::SentenceTokenizer::from_bytes(
        &std::fs::read(dir.join("tokenizer.json")).unwrap(),
    )
    .unwrap();
    let owned: Vec<String> = sentences.iter().map(|s| s.to_string()).collect();
    let job =
        gpuchain_compute::embed::embed(&params, &tok, &owned, 32, gpuchain_compute::Backend::Cpu)
            .unwrap();
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    for (v, want) in vectors.iter().zip(job.chunks(384)) {
        assert_eq!(v.len(), 384);
        assert!(dot(v, want) > 0.99999, "the job's embedding");
    }
    assert!(dot(&vectors[0], &vectors[1]) > dot(&vectors[0], &vectors[2]) + 0.3);
    let r = embed(json!({"model": "minilm", "input": "hello", "encoding_format": "base64"}))
        .await
        .unwrap();
    let e: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    // 384 f32 values are 1,536 bytes: 2,048 base64 characters.
    assert_eq!(e["data"][0]["embedding"].as_str().unwrap().len(), 2048);
    for (body, status) in [
        (json!({"model": "minilm", "input": []}), 400),
        (json!({"model": "minilm", "input": 7}), 400),
        (json!({"model": "minilm", "input": [""]}), 400),
        (json!({"model": "smollm2", "input": "x"}), 404),
    ] {
        let r = embed(body.clone()).await.unwrap();
        assert_eq!(r.status(), status, "{body}");
    }

    // Overload: while a long answer streams on the only slot, another request is told to
    // retry at once.
    let busy = post(question(true, 400).to_string()).await.unwrap();
    let mut stream = busy.bytes_stream();
    stream.next().await.unwrap().unwrap();
    let r = post(question(false, 8).to_string()).await.unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "1");
    // Once the long answer is abandoned, the slot comes back.
    drop(stream);
    let mut served = false;
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        if post(question(false, 8).to_string()).await.unwrap().status() == 200 {
            served = true;
            break;
        }
    }
    assert!(served, "the slot is released when the client goes away");

    // The Prometheus metrics count what happened.
    let metrics = get_text(&http, &format!("{base}/metrics")).await;
    let value = |name: &str| metric(&metrics, name);
    assert!(value("gpuchain_serve_chat_requests_total") >= 4.0);
    assert_eq!(value("gpuchain_serve_embedding_requests_total"), 2.0);
    assert!(value("gpuchain_serve_rejected_busy_total") >= 1.0);
    assert_eq!(value("gpuchain_serve_rejected_bad_total"), 10.0);
    assert!(value("gpuchain_serve_generated_tokens_total") > 16.0);
    assert!(value("gpuchain_serve_first_token_seconds_total") > 0.0);
    assert_eq!(value("gpuchain_serve_slots"), 1.0);
    assert!(value("process_resident_memory_bytes") > 1e8);
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

#[test]
fn the_official_openai_python_client_works_unchanged() {
    let python = openai_python();
    let (_server, base) = start();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../clients/openai/chat_check.py");
    let out = Command::new(python)
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
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["answer"].as_str().unwrap().contains("Paris"));
}

/// The body of `GET url`.
async fn get_text(http: &reqwest::Client, url: &str) -> String {
    http.get(url).send().await.unwrap().text().await.unwrap()
}

/// The value of the series `name` in the Prometheus text `metrics`.
fn metric(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} in {metrics}"))
        .parse()
        .unwrap()
}

/// The same checkpoint offered as two models under a budget that holds one: each request
/// for the other unloads the idle one and loads its own; while one is generating, a request
/// for the other is told to retry rather than unloading it.
#[tokio::test]
async fn models_load_when_asked_for_and_the_idle_one_makes_room_under_the_budget() {
    let file = common::smollm2_file();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpuchain-provider"));
    cmd.args(["serve-model", "--listen", "127.0.0.1:0", "--name", "a"])
        .args([
            "--max-concurrent",
            "2",
            "--memory-budget-mb",
            "150",
            "--model",
        ])
        .arg(&file)
        .arg("--also-model")
        .arg(format!("b={}", file.display()));
    let (_server, base) = spawn(cmd);
    let http = reqwest::Client::new();
    let ask = |model: &str, stream: bool, max_tokens: u32| {
        let mut body = question(stream, max_tokens);
        body["model"] = json!(model);
        post_json(
            &http,
            format!("{base}/v1/chat/completions"),
            body.to_string(),
        )
    };

    let models: Value =
        serde_json::from_str(&get_text(&http, &format!("{base}/v1/models")).await).unwrap();
    assert_eq!(models["data"][0]["id"], "a");
    assert_eq!(models["data"][1]["id"], "b");

    let m = get_text(&http, &format!("{base}/metrics")).await;
    assert_eq!(
        metric(&m, "gpuchain_serve_models_loaded"),
        1.0,
        "a, at start"
    );
    for (model, loads, evictions) in [("a", 1.0, 0.0), ("b", 2.0, 1.0), ("a", 3.0, 2.0)] {
        let r = ask(model, false, 16).await.unwrap();
        assert_eq!(r.status(), 200, "{model}");
        let answer: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
        assert!(
            answer["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .contains("Paris"),
            "{answer}"
        );
        assert_eq!(answer["model"], model);
        let m = get_text(&http, &format!("{base}/metrics")).await;
        assert_eq!(
            metric(&m, "gpuchain_serve_model_loads_total"),
            loads,
            "{model}"
        );
        assert_eq!(
            metric(&m, "gpuchain_serve_model_evictions_total"),
            evictions
        );
        assert_eq!(metric(&m, "gpuchain_serve_models_loaded"), 1.0);
        assert!(metric(&m, "gpuchain_serve_weight_bytes") < 150e6);
    }

    // While `a` answers at length (counting on, no end of turn in sight), `b` cannot have
    // its memory: retry, at once.
    let counting = json!({"model": "a", "prompt": "1, 2, 3, 4, 5, 6, 7, 8, 9, 10,",
                          "max_tokens": 400, "temperature": 0, "stream": true});
    let busy = post_json(
        &http,
        format!("{base}/v1/completions"),
        counting.to_string(),
    )
    .await
    .unwrap();
    assert_eq!(busy.status(), 200);
    let mut stream = busy.bytes_stream();
    stream.next().await.unwrap().unwrap();
    let r = ask("b", false, 8).await.unwrap();
    assert_eq!(r.status(), 429);
    drop(stream);
    let mut served = false;
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        if ask("b", false, 8).await.unwrap().status() == 200 {
            served = true;
            break;
        }
    }
    assert!(served, "once `a` is idle again, `b` gets its room");

    let r = ask("c", false, 8).await.unwrap();
    assert_eq!(r.status(), 404);
}

/// Requests that arrive together are generated together: one batch steps all of them (the
/// metrics count more answers than steps), one joining while others are half-way through is
/// read into the running batch, and every answer is the one the request gets alone.
#[tokio::test]
async fn answers_asked_at_once_share_one_batch_and_match_the_answers_asked_alone() {
    let (_server, base) = spawn(serve_smollm2(&["--max-concurrent", "4"]));
    let http = reqwest::Client::new();
    let questions = [
        "What is the capital of France?",
        "Name three colours of the rainbow.",
        "What do bees make?",
        "Count from one to five in words.",
    ];
    let ask = |q: &'static str| greedy_answer(&http, &base, q, 24);
    let mut alone = Vec::new();
    for q in questions {
        alone.push(ask(q).await);
    }
    let m = get_text(&http, &format!("{base}/metrics")).await;
    let (steps, stepped) = (
        metric(&m, "gpuchain_serve_batch_steps_total"),
        metric(&m, "gpuchain_serve_batch_sequences_total"),
    );
    assert_eq!(
        steps, stepped,
        "asked one at a time, each step holds one answer"
    );

    // Three at once, and the fourth once the others are generating.
    let first_three = futures::future::join_all(questions[..3].iter().map(|q| ask(q)));
    let late = async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        ask(questions[3]).await
    };
    let (mut together, last) = tokio::join!(first_three, late);
    together.push(last);
    assert_eq!(together, alone);
    let m = get_text(&http, &format!("{base}/metrics")).await;
    let steps = metric(&m, "gpuchain_serve_batch_steps_total") - steps;
    let stepped = metric(&m, "gpuchain_serve_batch_sequences_total") - stepped;
    assert!(
        stepped >= 2.0 * steps,
        "{stepped} answers stepped in {steps} steps: batched"
    );
    assert!(
        steps < 24.0 * 4.0,
        "{steps} steps for four answers of up to 24 tokens"
    );
}

/// Chat prompts begin with the same template and system message: each model keeps the keys
/// and values of the prompts it read, and a later prompt starts from the longest beginning
/// it shares with one of them. The answers are the answers of an endpoint that reads every
/// prompt whole (`--prefix-cache-mb 0`).
#[tokio::test]
async fn prompts_beginning_alike_read_that_beginning_once_and_get_the_same_answers() {
    let serve = |prefix_mb: &str| spawn(serve_smollm2(&["--prefix-cache-mb", prefix_mb]));
    let ((_cached, cached), (_whole, whole)) = (serve("32"), serve("0"));
    let http = reqwest::Client::new();
    let questions = [
        "What is the capital of France?",
        "What do bees make?",
        "What is the capital of France?",
        "Name three colours of the rainbow.",
    ];
    for q in questions {
        assert_eq!(
            greedy_answer(&http, &cached, q, 16).await,
            greedy_answer(&http, &whole, q, 16).await,
            "{q}"
        );
    }
    let reused = |base: String| {
        let http = http.clone();
        async move {
            let m = get_text(&http, &format!("{base}/metrics")).await;
            (
                metric(&m, "gpuchain_serve_prompt_tokens_reused_total"),
                metric(&m, "gpuchain_serve_prompt_tokens_total"),
            )
        }
    };
    let (saved, read) = reused(cached).await;
    // The template and system message (about 25 tokens) for the second and fourth
    // questions, and the repeated question (about 37 tokens) all but its last token.
    assert!(
        saved >= 2.0 * 20.0 + 30.0,
        "{saved} of {read} prompt tokens reused"
    );
    assert!(saved < read);
    assert_eq!(
        reused(whole).await.0,
        0.0,
        "nothing kept with a budget of 0"
    );
}

/// Threads of process `pid` named `compute …` (the model's matrix products).
fn compute_threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter(|t| {
            let comm = t.as_ref().map(|t| t.path().join("comm")).unwrap();
            std::fs::read_to_string(comm).is_ok_and(|c| c.starts_with("compute "))
        })
        .count()
}

/// Providers sharing a host's cores split them with `--threads`: each endpoint computes on
/// that many threads, and the answers do not depend on how many.
#[tokio::test]
async fn threads_set_how_many_threads_compute_and_answers_do_not_depend_on_them() {
    let (one, one_base) = spawn(serve_smollm2(&["--threads", "1"]));
    let (three, three_base) = spawn(serve_smollm2(&["--threads", "3"]));
    let http = reqwest::Client::new();
    for q in [
        "What is the capital of France?",
        "Name three colours of the rainbow.",
    ] {
        assert_eq!(
            greedy_answer(&http, &one_base, q, 16).await,
            greedy_answer(&http, &three_base, q, 16).await,
            "{q}"
        );
    }
    assert_eq!(compute_threads(one.0.id()), 1);
    assert_eq!(compute_threads(three.0.id()), 3);
    let refused = serve_smollm2(&["--threads", "0"]).output().unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("--threads"), "{said}");
}
