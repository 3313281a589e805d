//! Serving through `gpuchain-gateway` against the same three providers asked directly, on
//! 127.0.0.1 with the real SmolLM2 (`gpuchain-provider serve-model`, 16 slots each).
//!
//! `gateway_bench [rounds] [seconds] [max tokens] [hedge ms] [prefix a/b]` — for 1, 8 and 32
//! concurrent clients in a closed loop (each asks again as soon as its streamed answer is
//! complete; greedy, a question of its own each time, "Question 3-17: describe Lisbon in
//! three sentences.", which runs to the token limit: prompts share the chat template and
//! system message, as different users' questions do, and no more), alternately direct
//! (client i asks provider i mod 3) and through the gateway (the side that goes first
//! alternates by round), `seconds` per run: time to first token and whole-answer latency
//! p50/p99 (ms, from the request's send) and completion tokens per second across the
//! providers, with the load average before each run. With `prefix a/b` = 1 the two sides
//! are instead two gateways over three providers each, one set keeping prompt prefixes
//! (`--prefix-cache-mb 32`) and one reading every prompt whole (0). Then the failover:
//! three clients stream through the gateway, a provider is killed while answering, and the
//! time from the kill to the first token of a request sent right after it is reported,
//! with the longest pause of any answer that was streaming across the kill (resumed on
//! another provider). One JSON report on stdout.

use std::time::{Duration, Instant};

use gpuchain_tests::serving::{answer_stream, gateway, serve_model, Server};
use serde_json::{json, Value};

/// One answer as the client saw it.
#[derive(Clone, Debug)]
struct Sample {
    sent: Instant,
    ttft: Option<Duration>,
    total: Duration,
    tokens: u64,
    /// Arrival of each piece of text.
    pieces: Vec<Instant>,
    ok: bool,
}

/// Cities the questions are about.
const CITIES: [&str; 12] = [
    "Paris", "Lisbon", "Rome", "Oslo", "Cairo", "Lima", "Tokyo", "Nairobi", "Quebec", "Hanoi",
    "Vienna", "Perth",
];

/// Client `client`'s `n`-th question: no two alike.
fn question(client: usize, n: usize) -> String {
    let city = CITIES[(client * 5 + n) % CITIES.len()];
    format!("Question {client}-{n}: describe {city} in three sentences.")
}

async fn ask(http: &reqwest::Client, base: &str, max_tokens: u32, question: &str) -> Sample {
    let sent = Instant::now();
    let body = json!({"model": "smollm2", "temperature": 0, "stream": true,
        "stream_options": {"include_usage": true}, "max_tokens": max_tokens,
        "messages": [{"role": "user", "content": question}]});
    let mut s = Sample {
        sent,
        ttft: None,
        total: Duration::ZERO,
        tokens: 0,
        pieces: Vec::new(),
        ok: false,
    };
    let Ok(mut stream) = answer_stream(http, base, "/v1/chat/completions", &body).await else {
        s.total = sent.elapsed();
        return s;
    };
    loop {
        match stream.next_piece().await {
            Ok(Some(_)) => {
                s.ttft.get_or_insert(sent.elapsed());
                s.pieces.push(Instant::now());
            }
            Ok(None) => {
                s.ok = true;
                break;
            }
            Err(_) => break,
        }
    }
    s.tokens = stream.completion_tokens.unwrap_or(0);
    s.total = sent.elapsed();
    s
}

/// `clients` closed-loop clients, client i asking `targets[i % len]`, for `seconds`.
async fn closed_loop(
    http: &reqwest::Client,
    targets: &[String],
    clients: usize,
    seconds: u64,
    max_tokens: u32,
) -> Vec<Sample> {
    let until = Instant::now() + Duration::from_secs(seconds);
    let tasks: Vec<_> = (0..clients)
        .map(|i| {
            let (http, base) = (http.clone(), targets[i % targets.len()].clone());
            tokio::spawn(async move {
                let mut samples = Vec::new();
                while Instant::now() < until {
                    let q = question(i, samples.len());
                    samples.push(ask(&http, &base, max_tokens, &q).await);
                }
                samples
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap_or_default());
    }
    all
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let i = ((p / 100.0) * (values.len() - 1) as f64).round() as usize;
    values[i]
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e4).round() / 10.0
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn summary(samples: &[Sample], seconds: u64) -> Value {
    let ok: Vec<&Sample> = samples.iter().filter(|s| s.ok).collect();
    let mut ttft: Vec<f64> = ok.iter().filter_map(|s| s.ttft).map(ms).collect();
    let mut total: Vec<f64> = ok.iter().map(|s| ms(s.total)).collect();
    let tokens: u64 = ok.iter().map(|s| s.tokens).sum();
    json!({
        "answers": ok.len(),
        "failed": samples.len() - ok.len(),
        "ttft_ms_p50": percentile(&mut ttft, 50.0),
        "ttft_ms_p99": percentile(&mut ttft, 99.0),
        "latency_ms_p50": percentile(&mut total, 50.0),
        "latency_ms_p99": percentile(&mut total, 99.0),
        "tokens_per_s": (tokens as f64 / seconds as f64 * 10.0).round() / 10.0,
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let rounds = args.first().copied().unwrap_or(3);
    let seconds = args.get(1).copied().unwrap_or(20);
    let max_tokens = args.get(2).copied().unwrap_or(32) as u32;
    let hedge_ms = args.get(3).copied().unwrap_or(1_500);
    let prefix_ab = args.get(4).copied() == Some(1);

    let hedge = hedge_ms.to_string();
    // Three providers (keeping `prefix_mb` of prompt prefixes each) and a gateway over them.
    let trio = |prefix_mb: &str| -> anyhow::Result<(Vec<Server>, Vec<String>, Server)> {
        // serve-model reads the flag's default from the environment, which children inherit.
        std::env::set_var("GPUCHAIN_PREFIX_CACHE_MB", prefix_mb);
        let providers = (0..3)
            .map(|_| serve_model(16))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let urls: Vec<String> = providers.iter().map(|p| p.url.clone()).collect();
        let gw = gateway(&urls, &["--hedge-after-ms", hedge.as_str()])?;
        Ok((providers, urls, gw))
    };
    let (mut providers, urls, gw) = trio("32")?;
    let whole = if prefix_ab { Some(trio("0")?) } else { None };
    let http = reqwest::Client::new();
    // Warm every path once.
    let mut targets: Vec<&String> = urls.iter().chain([&gw.url]).collect();
    if let Some((_, urls, gw)) = &whole {
        targets.extend(urls.iter().chain([&gw.url]));
    }
    for u in targets {
        ask(&http, u, 8, "Say hello.").await;
    }

    let mut runs = Vec::new();
    for round in 0..rounds {
        for clients in [1usize, 8, 32] {
            let sides: [(&str, Vec<String>); 2] = match &whole {
                Some((_, _, whole_gw)) => [
                    ("gateway, prefix cache", vec![gw.url.clone()]),
                    ("gateway, whole prompts", vec![whole_gw.url.clone()]),
                ],
                None => [("direct", urls.clone()), ("gateway", vec![gw.url.clone()])],
            };
            let order: Vec<usize> = if round % 2 == 0 {
                vec![0, 1]
            } else {
                vec![1, 0]
            };
            for i in order {
                let (side, targets) = &sides[i];
                let load = load_average();
                let samples = closed_loop(&http, targets, clients, seconds, max_tokens).await;
                let mut run = summary(&samples, seconds);
                run["side"] = json!(side);
                run["clients"] = json!(clients);
                run["round"] = json!(round);
                run["load_average_before"] = json!(load);
                eprintln!("{run}");
                runs.push(run);
            }
        }
    }

    // Failover: three clients through the gateway; kill a provider while it answers.
    let until = Instant::now() + Duration::from_secs(8);
    let tasks: Vec<_> = (0..3)
        .map(|_| {
            let (http, base) = (http.clone(), gw.url.clone());
            tokio::spawn(async move {
                let mut samples = Vec::new();
                while Instant::now() < until {
                    samples.push(ask(&http, &base, 64, "Describe Paris in three sentences.").await);
                }
                samples
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let killed_at = Instant::now();
    providers[0].kill();
    let after = ask(&http, &gw.url, 8, "What is the capital of France?").await;
    let first_token_after_kill = after.ttft.map(|t| ms(after.sent + t - killed_at));
    let mut spanning = Vec::new();
    let mut failed = 0;
    for t in tasks {
        for s in t.await.unwrap_or_default() {
            failed += usize::from(!s.ok);
            let Some(last) = s.pieces.last() else {
                continue;
            };
            if s.sent < killed_at && *last > killed_at {
                let longest = s
                    .pieces
                    .windows(2)
                    .map(|w| w[1] - w[0])
                    .max()
                    .unwrap_or_default();
                spanning.push(ms(longest));
            }
        }
    }
    drop(whole);
    let report = json!({
        "max_tokens": max_tokens,
        "prefix_cache_a_b": prefix_ab,
        "seconds_per_run": seconds,
        "hedge_after_ms": hedge_ms,
        "runs": runs,
        "failover": {
            "first_token_of_a_request_sent_at_the_kill_ms": first_token_after_kill,
            "answers_streaming_across_the_kill": spanning.len(),
            "their_longest_pause_ms": spanning,
            "failed_answers": failed,
        },
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
