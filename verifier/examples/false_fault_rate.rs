//! False-fault rate of the verifier's comparison over honest jobs across backends: every
//! job runs on burn's multi-threaded CPU backend and on the canonical path, and
//! `compute::compare` under the job kind's tolerance judges each against the other, both
//! ways (a verifier on the fast path checking a canonical provider, and the canonical path
//! checking a fast provider). Any mismatch would be an honest provider slashed.
//!
//! Jobs: the digits MLP and CNN on 1–32 rows each, drawn from the UCI digits set, a third
//! of them with small pixel noise added (to produce near-ties between classes).
//!
//! `cargo build --workspace --all-targets && $CARGO_TARGET_DIR/debug/examples/false_fault_rate [jobs]`

use std::time::Instant;

use gpuchain_compute::blob::BlobStore;
use gpuchain_compute::digits::Digits;
use gpuchain_compute::tensor_io::encode_f32;
use gpuchain_compute::{compare, run_job, Backend, Verdict};
use gpuchain_jobspec::{InferenceSpec, JobSpec, ModelArch};

fn stream(j: u64) -> blake3::OutputReader {
    let mut h = blake3::Hasher::new();
    h.update(b"gpuchain/false-fault-bench");
    h.update(&j.to_le_bytes());
    h.finalize_xof()
}

fn next_u32(s: &mut blake3::OutputReader) -> u32 {
    let mut b = [0u8; 4];
    s.fill(&mut b);
    u32::from_le_bytes(b)
}

#[derive(Default)]
struct Tally {
    identical: u64,
    within: u64,
    mismatch: u64,
    max_rel_l2_ppm: u64,
    min_agreement_ppm: u64,
}

impl Tally {
    fn add(&mut self, v: &Verdict) {
        match v {
            Verdict::Identical => self.identical += 1,
            Verdict::WithinTolerance { metrics } => {
                self.within += 1;
                self.max_rel_l2_ppm = self.max_rel_l2_ppm.max(metrics.rel_l2_ppm);
                self.min_agreement_ppm = self.min_agreement_ppm.min(metrics.agreement_ppm);
            }
            Verdict::Mismatch { reason, .. } => {
                self.mismatch += 1;
                eprintln!("FALSE FAULT: {reason}");
            }
        }
    }
}

fn main() -> anyhow::Result<()> {
    let jobs: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1200);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let dir = tempfile::tempdir()?;
    let store = BlobStore::open(dir.path())?;
    let mlp = store.put(&std::fs::read(
        root.join("data/models/digits-mlp.safetensors"),
    )?)?;
    let cnn = store.put(&std::fs::read(
        root.join("data/models/digits-cnn.safetensors"),
    )?)?;
    let data = Digits::builtin()?;
    let (mut tallies, mut secs) = ([Tally::default(), Tally::default()], [0.0f64, 0.0f64]);
    for t in &mut tallies {
        t.min_agreement_ppm = 1_000_000;
    }
    let start = Instant::now();
    for j in 0..jobs {
        let mut s = stream(j);
        let rows = 1 + next_u32(&mut s) % 32;
        let noisy = j % 3 == 0;
        let mut pixels = Vec::with_capacity(rows as usize * 64);
        for _ in 0..rows {
            let i = next_u32(&mut s) as usize % data.len();
            for p in data.image(i) {
                let noise = if noisy {
                    (next_u32(&mut s) % 1000) as f32 / 500.0 - 1.0
                } else {
                    0.0
                };
                pixels.push((p + noise).clamp(0.0, 16.0));
            }
        }
        let input = store.put(&encode_f32(&[rows as usize, 64], &pixels))?;
        let (arch, weights) = if j % 2 == 0 {
            (ModelArch::DigitsMlp, &mlp)
        } else {
            (ModelArch::DigitsCnn, &cnn)
        };
        let job = JobSpec::Inference(InferenceSpec {
            arch,
            weights: weights.clone(),
            tokenizer: None,
            input,
            batch_size: 64,
            llama: None,
            generation: None,
            tolerance: None,
        });
        let t = Instant::now();
        let fast = run_job(&job, &store, Backend::Cpu)?;
        secs[0] += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let canon = run_job(&job, &store, Backend::Canonical)?;
        secs[1] += t.elapsed().as_secs_f64();
        let tol = job.tolerance();
        // A fast-path verifier checking a canonical provider, and the canonical path
        // checking a fast provider.
        tallies[0].add(&compare(job.kind(), &tol, &canon.bytes, &fast.bytes)?);
        tallies[1].add(&compare(job.kind(), &tol, &fast.bytes, &canon.bytes)?);
    }
    println!("jobs: {jobs} honest (digits MLP and CNN, 1-32 rows, a third with pixel noise); run time {:.1} s", start.elapsed().as_secs_f64());
    println!("| check | comparisons | identical | within tolerance | false faults | max rel L2 (ppm) | min argmax agreement (ppm) |");
    println!("|---|---|---|---|---|---|---|");
    for (name, t) in [
        "canonical provider, CPU-path verifier",
        "CPU provider, canonical verifier",
    ]
    .iter()
    .zip(&tallies)
    {
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} |",
            t.identical + t.within + t.mismatch,
            t.identical,
            t.within,
            t.mismatch,
            t.max_rel_l2_ppm,
            t.min_agreement_ppm
        );
    }
    println!(
        "execution: CPU backend {:.3} s, canonical {:.3} s in all",
        secs[0], secs[1]
    );
    let faults = tallies[0].mismatch + tallies[1].mismatch;
    println!(
        "false-fault rate: {faults}/{} = {:.4}%",
        2 * jobs,
        100.0 * faults as f64 / (2 * jobs) as f64
    );
    Ok(())
}
