//! What auditing a served answer costs against serving it, on this machine: SmolLM2 answers
//! chat requests the way `serve-model` does (prefill, then one token at a time) and a
//! verifier audits each answer (`serving::audit_answer`: one teacher-forced pass), the two
//! alternating request by request. Prints the median and spread of each and of their ratio,
//! the machine's load, and the audit overhead at the chain's default audit chance for
//! batches of 16 receipts (one receipt audited per audited claim).
//!
//! `cargo run --release -p gpuchain-compute --example audit_overhead -- FILE.gguf [ROUNDS]`

use std::time::Instant;

use gpuchain_compute::serving::{answer_units, audit_answer, AnswerRecord, ChatModel, ChatRequest};
use gpuchain_jobspec::Sampling;

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[0], v[v.len() / 2], v[v.len() - 1])
}

#[allow(clippy::disallowed_methods)] // wall time for a benchmark, never in state
fn now() -> Instant {
    Instant::now()
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let file = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: FILE.gguf [ROUNDS]"))?;
    let rounds: usize = args.next().map_or(Ok(7), |n| n.parse())?;
    let model = ChatModel::load(std::path::Path::new(&file), "smollm2".into())?;
    let questions = [
        "What is the capital of France?",
        "Name three primary colours.",
        "Explain what a GPU does in one sentence.",
        "Count from one to ten.",
    ];
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let (mut served, mut audited, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let q = questions[round % questions.len()];
        let request = serde_json::json!({"model": "smollm2", "max_tokens": 64, "seed": round,
            "messages": [{"role": "user", "content": q}]})
        .to_string();
        let r: ChatRequest = serde_json::from_str(&request)?;
        let p = r.prepare(&model, 0).map_err(anyhow::Error::msg)?;
        let t = now();
        let mut seq = model.decoder.start(&p.prompt, &p.sampling, 0);
        let mut tokens = Vec::new();
        for _ in 0..p.max_tokens {
            let Some(tok) = seq.next_token() else { break };
            tokens.push(tok);
            if Some(tok) == model.eos {
                break;
            }
        }
        let serve = t.elapsed().as_secs_f64();
        let text_ids: Vec<u32> = tokens
            .iter()
            .copied()
            .filter(|t| Some(*t) != model.eos)
            .collect();
        let record = AnswerRecord {
            text: model.text(&text_ids),
            tokens,
            seed: match p.sampling {
                Sampling::Seeded { seed, .. } => Some(seed),
                Sampling::Greedy => None,
            },
        };
        let units = answer_units(p.prompt.len(), &record);
        let t = now();
        audit_answer(&model, request.as_bytes(), &record.bytes(), units)
            .map_err(anyhow::Error::msg)?;
        let audit = t.elapsed().as_secs_f64();
        served.push(serve);
        audited.push(audit);
        ratio.push(audit / serve);
    }
    let (s0, s, s1) = median(served);
    let (a0, a, a1) = median(audited);
    let (r0, r, r1) = median(ratio);
    println!("load average before: {}", load.trim());
    println!("serving an answer: median {s:.3} s (min {s0:.3}, max {s1:.3})");
    println!("auditing it:       median {a:.3} s (min {a0:.3}, max {a1:.3})");
    println!("audit / serve:     median {r:.3} (min {r0:.3}, max {r1:.3})");
    let share = 50_000.0 / 1e6 / 16.0;
    println!(
        "overhead at a 5% audit chance and 16 receipts per claim: {:.4}% of serving compute",
        share * r * 100.0
    );
    println!(
        "load average after: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    Ok(())
}
