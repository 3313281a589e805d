//! Prefill and decode speed of the row decoder (the CPU path of generation jobs) on a GGUF
//! file, in the form `scripts/llama-cpp-anchor.mjs bench` prints for llama.cpp, so that
//! `scripts/bench-llm.sh` can alternate the two: one JSON line a run. The prompt is the
//! anchor's: "The quick brown fox jumps over the lazy dog. " repeated, cut to N tokens.
//! `verify_s` is what a verifier spends on the run's answers (teacher forcing);
//! `generate_cpu_s` and `verify_cpu_s` are the CPU time of generating the answers (prefill
//! included) and of checking them, all threads together. A batch's rows share one prompt
//! (as a job sampling several answers to one question does), which the check reads once
//! for all of them where its pass has 8-bit activations.
//!
//! `llm_bench FILE.gguf [--threads T] [--prompt-tokens N] [--new-tokens M] [--runs R]
//! [--batch B] [--weights quantised|f32] [--verify-runs K] [--verify-threads V]`
//!
//! With `--verify-runs K` the check runs K times a run and `verify_s`/`verify_cpu_s` are the
//! medians; with `--verify-threads V` it runs in a pool of V threads (default: T); the
//! verifier agent runs each check on one thread. `check_cpu_s` is the
//! whole of a verifier's check of the answers as a job (`check_generation`: reading and
//! checking the job's weights blob, building the decoder, the pass, judging each token;
//! the decoder is built in the first run only), `next_check_cpu_s` the same check again, as
//! the next job of the same model. Each check starts with no prompt read before
//! (`forget_checked_prompts`).
//!
//! `verify_again_cpu_s` is the pass's CPU time over the same prompts and answers right
//! after one (the same job checked for another replica: its prompts read before).
//!
//! With `--chat QUESTION` the prompt is that question in the model's chat template (its
//! default system message included; `--prompt-tokens` is then not read), and
//! `verify_warm_cpu_s` is the pass's CPU time once the prompt of another question
//! (`--chat-before`, default "Name a prime number.") has been checked: a verifier's check of
//! a chat answer after the first, starting past the system message and the turn's opening
//! the two share (`warm_prompt_tokens_read_before` of them).

use std::collections::BTreeMap;
use std::time::Instant;

use std::sync::Mutex;

use gpuchain_compute::blob::BlobStore;
use gpuchain_compute::gguf;
use gpuchain_compute::llama::{
    check_generation, forget_checked_prompts, Activations, PrefixCache, RowDecoder,
};
use gpuchain_compute::serving::{ChatModel, DEFAULT_PREFIX_CACHE_BYTES};
use gpuchain_compute::tensor_io::encode_u32;
use gpuchain_compute::Backend;
use gpuchain_jobspec::{GenerationSpec, InferenceSpec, ModelArch, Sampling};

/// Resident memory of this process in bytes (Linux `VmRSS`).
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// CPU time this process's threads have run, in seconds (Linux, the scheduler's own count
/// in nanoseconds: `/proc/self/task/*/schedstat`). Threads spinning while they wait for
/// work count; threads asleep do not.
fn cpu_seconds() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    let ns: u64 = tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    ns as f64 / 1e9
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let file = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: llm_bench FILE.gguf [--option value]…"))?;
    let mut opts: BTreeMap<String, String> = [
        ("threads", "2"),
        ("prompt-tokens", "37"),
        ("new-tokens", "16"),
        ("runs", "3"),
        ("batch", "1"),
        ("weights", "quantised"),
        ("verify-runs", "1"),
        ("verify-threads", "0"),
        ("chat", ""),
        ("chat-before", "Name a prime number."),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    while let Some(key) = args.next() {
        let key = key.trim_start_matches("--").to_string();
        let value = args
            .next()
            .ok_or_else(|| anyhow::anyhow!("--{key} needs a value"))?;
        if opts.insert(key.clone(), value).is_none() {
            anyhow::bail!("unknown option --{key}");
        }
    }
    let num = |k: &str| -> anyhow::Result<usize> { Ok(opts[k].parse()?) };
    let (threads, plen, new, runs, batch) = (
        num("threads")?,
        num("prompt-tokens")?,
        num("new-tokens")?,
        num("runs")?,
        num("batch")?.max(1),
    );
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()?;
    let verify_runs = num("verify-runs")?.max(1);
    let verify_pool = rayon::ThreadPoolBuilder::new()
        .num_threads(match num("verify-threads")? {
            0 => threads,
            v => v,
        })
        .build()?;

    // The model as serving holds it (decoder, tokenizers, template), loaded as serving
    // loads it: what a provider's endpoint keeps resident.
    let before = resident_bytes();
    let path = std::path::Path::new(&file);
    let file_bytes = gguf::file::model_size(path)?;
    let model = match opts["weights"].as_str() {
        "quantised" => ChatModel::load(path, "bench".into())?,
        "f32" => {
            let mapped = gguf::GgufFile::open(path)?;
            let g = mapped.parse()?;
            let shape = gguf::llama::shape(&g)?;
            ChatModel {
                name: "bench".into(),
                decoder: RowDecoder::new(
                    gguf::llama::config(&g)?,
                    &gguf::llama::params(&g, &shape)?,
                )?,
                chat: gguf::ChatTemplate::of(&g)?,
                eos: gguf::eos_token(&g),
                context: shape.max_seq_len as usize,
                prefixes: Mutex::new(PrefixCache::new(DEFAULT_PREFIX_CACHE_BYTES)),
            }
        }
        other => anyhow::bail!("--weights {other}: quantised or f32"),
    };
    let resident = resident_bytes().saturating_sub(before);
    let decoder = &model.decoder;
    let text = "The quick brown fox jumps over the lazy dog. ".repeat(plen);
    let ids = model
        .chat
        .plain
        .encode(text.as_str(), false)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let chat_ids =
        |question: &str| -> anyhow::Result<Vec<u32>> { Ok(model.chat.ids(&[("user", question)])?) };
    let (prompt, before): (Vec<u32>, Option<Vec<u32>>) = match opts["chat"].as_str() {
        "" => (ids.get_ids()[..plen].to_vec(), None),
        question => (
            chat_ids(question)?,
            Some(chat_ids(opts["chat-before"].as_str())?),
        ),
    };
    let plen = prompt.len();
    let prompts = prompt.repeat(batch);
    for run in 0..runs {
        // As the anchor counts: the prefill reads the prompt and picks one token; the decode
        // is `new` steps of one token per sequence.
        let t = Instant::now();
        let _ = decoder.generate(&prompts, batch, 1, &Sampling::Greedy);
        let prefill_s = t.elapsed().as_secs_f64();
        let (t, cpu) = (Instant::now(), cpu_seconds());
        let out = decoder.generate(&prompts, batch, new + 1, &Sampling::Greedy);
        let generate_cpu_s = cpu_seconds() - cpu;
        let decode_s = (t.elapsed().as_secs_f64() - prefill_s).max(0.0);
        // What a verifier spends on the answers: the teacher-forced pass over the prompts and
        // answers, the rows together, as `check_generation` runs it (the check itself is a
        // scan of the logits).
        let rows: Vec<(&[u32], &[u32])> = out
            .chunks(new + 1)
            .map(|answer| (prompt.as_slice(), answer))
            .collect();
        // One fast pass over `rows` on the verifier's pool: its wall and CPU seconds.
        let pass = |rows: &[(&[u32], &[u32])]| {
            let (t, cpu) = (Instant::now(), cpu_seconds());
            let _ = verify_pool.install(|| decoder.teacher_forced_rows(rows, Activations::Int8));
            (t.elapsed().as_secs_f64(), cpu_seconds() - cpu)
        };
        let (mut walls, mut cpus, mut again, mut warm) = (vec![], vec![], vec![], vec![]);
        let mut started_past = 0;
        for _ in 0..verify_runs {
            decoder.forget_checked_prompts();
            let (wall, cpu) = pass(&rows);
            walls.push(wall);
            cpus.push(cpu);
            again.push(pass(&rows).1);
            if let Some(before) = &before {
                decoder.forget_checked_prompts();
                pass(&[(before.as_slice(), &out[..1])]);
                let reused = decoder.checked_prompt_tokens_reused();
                warm.push(pass(&rows).1);
                started_past = decoder.checked_prompt_tokens_reused() - reused;
            }
        }
        let (verify_s, verify_cpu_s) = (median(&mut walls), median(&mut cpus));
        let verify_again_cpu_s = median(&mut again);
        let warm = if warm.is_empty() {
            String::new()
        } else {
            format!(
                ",\"verify_warm_cpu_s\":{:.4},\"warm_prompt_tokens_read_before\":{started_past}",
                median(&mut warm)
            )
        };
        let [check_cpu_s, next_check_cpu_s] =
            verify_pool.install(|| check_as_a_job(path, &prompt, batch, &out))?;
        println!(
            "{{\"prefill_tokens\":{plen},\"prefill_s\":{prefill_s:.4},\"decode_tokens\":{new},\"decode_s\":{decode_s:.4},\"verify_s\":{verify_s:.4},\"generate_cpu_s\":{generate_cpu_s:.4},\"verify_cpu_s\":{verify_cpu_s:.4},\"verify_again_cpu_s\":{verify_again_cpu_s:.4},\"check_cpu_s\":{check_cpu_s:.4},\"next_check_cpu_s\":{next_check_cpu_s:.4},\"batch\":{batch},\"threads\":{threads},\"weights\":\"{}\",\"weight_bytes\":{},\"resident_bytes\":{resident},\"file_bytes\":{file_bytes}{warm}}}",
            opts["weights"],
            decoder.weight_bytes()
        );
        if run == 0 {
            eprintln!("greedy ids (seq 0): {:?}", &out[..new + 1]);
        }
    }
    Ok(())
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(0.0)
}

/// CPU seconds of `check_generation` on `answers` (`batch` rows of greedy tokens after
/// `prompt`) as a verifier runs it on a job, from the weights in a blob store: a first job
/// of the model, then the next job of the same model (its decoder kept from the first).
fn check_as_a_job(
    model: &std::path::Path,
    prompt: &[u32],
    batch: usize,
    answers: &[u32],
) -> anyhow::Result<[f64; 2]> {
    let dir = tempfile::tempdir()?;
    let store = BlobStore::open(dir.path())?;
    let new = answers.len() / batch.max(1);
    let spec = InferenceSpec {
        arch: ModelArch::LlamaGguf,
        weights: store.put(&std::fs::read(model)?)?,
        tokenizer: None,
        input: store.put(&encode_u32(&[batch, prompt.len()], &prompt.repeat(batch)))?,
        batch_size: batch as u32,
        llama: None,
        generation: Some(GenerationSpec {
            max_new_tokens: new as u32,
            sampling: Sampling::Greedy,
            stop_tokens: Vec::new(),
        }),
        tolerance: None,
    };
    let mut spent = [0.0; 2];
    for s in &mut spent {
        forget_checked_prompts();
        let cpu = cpu_seconds();
        let verdict = check_generation(
            &spec,
            &store,
            Backend::Cpu,
            &encode_u32(&[batch, new], answers),
        )?;
        *s = cpu_seconds() - cpu;
        anyhow::ensure!(
            verdict.accepted(),
            "the honest answers were faulted: {verdict:?}"
        );
    }
    Ok(spent)
}
