//! Detection probability vs jobs, and verification overhead, simulated with the chain's own
//! sampling code: `gpuchain_auction::audit::{audit_probability, audit_drawn}` decide audits
//! exactly as the auction's end-block does (a fresh block hash per job), reputation moves by
//! `gpuchain_reputation::apply` after every job, and ringers arrive at `challenge_rate_ppm`.
//! Default parameters of x/auction, x/reputation and x/verify. Integer-only, like the chain.
//!
//! `cargo run --release -p gpuchain-verify --example detection [providers] [jobs]`
//! (defaults 2000 and 500). Prints markdown.

use gpuchain_auction::audit::{audit_drawn, audit_probability};
use gpuchain_auction::{AuctionParams, Lease, LeaseState};
use gpuchain_reputation::{apply, Outcome, ReputationParams, NEUTRAL_PPM};
use gpuchain_types::{Address, BlockCtx, Ppm, PPM_ONE};
use gpuchain_verify::VerifyParams;

/// A deterministic draw in 0..10^6 for (purpose, provider, job).
fn draw_ppm(purpose: &str, provider: u64, job: u64) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(purpose.as_bytes());
    h.update(&provider.to_be_bytes());
    h.update(&job.to_be_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&h.finalize().as_bytes()[..8]);
    u64::from_be_bytes(first) % u64::from(PPM_ONE)
}

/// Whether the chain samples this job for audit, by the chain's code.
fn audited(score: Ppm, provider: u64, job: u64, params: &AuctionParams) -> (bool, Ppm) {
    let p = audit_probability(score, params);
    let ctx = BlockCtx {
        height: job,
        chain_id: "sim".into(),
        entropy: *blake3::hash(&[provider.to_be_bytes(), job.to_be_bytes()].concat()).as_bytes(),
        time_ms: 0,
    };
    let lease = Lease {
        id: provider.wrapping_mul(1_000_003).wrapping_add(job),
        order_id: 0,
        provider: Address([1; 20]),
        client: Address([2; 20]),
        price: 1,
        created_height: 0,
        deadline_height: 0,
        reveal_end_height: 0,
        commitment: Some(*blake3::hash(&job.to_le_bytes()).as_bytes()),
        result_hash: None,
        payout_height: None,
        verdict_deadline_height: None,
        state: LeaseState::Revealed,
        verification_charge: 0,
        fetched: false,
    };
    (audit_drawn(&ctx, &lease, p), p)
}

struct Run {
    /// detected_by[n] = providers caught within their first n + 1 jobs.
    detected_by: Vec<u64>,
    jobs: u64,
    audits: u64,
    audit_ppm_sum: u64,
}

/// `providers` providers that cheat on a job with probability `cheat_ppm`, starting at
/// reputation `start`; each runs `jobs` jobs or until caught.
fn simulate(providers: u64, jobs: u64, cheat_ppm: u64, start: Ppm) -> Run {
    let auction = AuctionParams::default();
    let reputation = ReputationParams::default();
    let ringer_ppm = u64::from(VerifyParams::default().challenge_rate_ppm);
    let mut first_catch = vec![0u64; usize::try_from(jobs).unwrap_or(0)];
    let mut run = Run {
        detected_by: Vec::new(),
        jobs: 0,
        audits: 0,
        audit_ppm_sum: 0,
    };
    for i in 0..providers {
        let seed = i
            .wrapping_add(cheat_ppm << 32)
            .wrapping_add(u64::from(start) << 48);
        let mut score = start;
        for j in 0..jobs {
            run.jobs += 1;
            let cheats = draw_ppm("cheat", seed, j) < cheat_ppm;
            let ringer = draw_ppm("ringer", seed, j) < ringer_ppm;
            let (audit, p) = audited(score, seed, j, &auction);
            run.audits += u64::from(audit);
            run.audit_ppm_sum += u64::from(p);
            if cheats && (audit || ringer) {
                if let Some(slot) = first_catch.get_mut(usize::try_from(j).unwrap_or(0)) {
                    *slot += 1;
                }
                break;
            }
            let outcome = if audit || ringer {
                Outcome::ChallengePassed
            } else {
                Outcome::Accepted
            };
            score = apply(score, outcome, &reputation);
        }
    }
    let mut total = 0;
    for c in first_catch {
        total += c;
        run.detected_by.push(total);
    }
    run
}

fn pct(numerator: u64, denominator: u64) -> String {
    let bp = (numerator * 1_000_000 / denominator.max(1)) / 100; // basis points of 1%
    format!("{}.{:02}%", bp / 100, bp % 100)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let providers: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let jobs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(500);
    let v = VerifyParams::default();
    let a = AuctionParams::default();
    println!(
        "Defaults: audit {}..{} ppm by reputation, ringers {} ppm of jobs; {providers} providers per row, up to {jobs} jobs each.\n",
        a.audit_min_ppm, a.audit_max_ppm, v.challenge_rate_ppm
    );
    let runs = [
        (
            "always cheats, new provider",
            simulate(providers, jobs, 1_000_000, NEUTRAL_PPM),
        ),
        (
            "cheats on 10% of jobs, new provider",
            simulate(providers, jobs, 100_000, NEUTRAL_PPM),
        ),
        (
            "always cheats, best reputation (farmed)",
            simulate(providers, jobs, 1_000_000, PPM_ONE),
        ),
    ];
    let marks: Vec<u64> = [1u64, 5, 10, 20, 30, 40, 50, 100, 200, 500]
        .into_iter()
        .filter(|n| *n <= jobs)
        .collect();
    print!("| jobs |");
    for (name, _) in &runs {
        print!(" {name} |");
    }
    println!();
    print!("|---|");
    for _ in &runs {
        print!("---|");
    }
    println!();
    for n in &marks {
        print!("| {n} |");
        for (_, run) in &runs {
            let caught = run
                .detected_by
                .get(usize::try_from(*n - 1).unwrap_or(0))
                .copied()
                .unwrap_or(0);
            print!(" {} |", pct(caught, providers));
        }
        println!();
    }
    let simulated: u64 = runs.iter().map(|(_, r)| r.jobs).sum();
    println!("\nJobs simulated: {simulated}.\n");

    // Overhead for honest providers: their reputation rises, so audits fall toward the
    // minimum; measure the mean audit rate over their first `jobs` jobs with the same code.
    let honest = simulate(providers, jobs, 0, NEUTRAL_PPM);
    let audit_ppm = honest.audits * 1_000_000 / honest.jobs.max(1);
    let r = u64::from(v.challenge_rate_ppm);
    // Costs in ppm of the provider's compute for the job. Audits re-run on the verifier's
    // fast path (compared by tolerance); a training audit re-runs one (round, worker) segment
    // of 15; a ringer costs the verifier one run to precompute its answer plus the
    // provider's run of the ringer itself. Canonical slowdown from docs/benchmarks.md (MiniLM
    // 9.2x, MLP 6.7x) applies to appeals and disputes only.
    let classes: [(&str, u64, u64, u64); 3] = [
        (
            "embedding inference (MiniLM)",
            500_000,
            1_000_000,
            2 * 1_000_000,
        ),
        (
            "digits MLP/CNN inference",
            300_000,
            1_000_000,
            2 * 1_000_000,
        ),
        (
            "training (15 rounds)",
            200_000,
            1_000_000 / 15,
            2 * 1_000_000,
        ),
    ];
    println!(
        "Honest providers: audited on {} of jobs (mean over their first {jobs}); ringers {}.\n",
        pct(audit_ppm, 1_000_000),
        pct(r, 1_000_000)
    );
    println!("| job class | share of provider compute | audit cost | ringer cost | overhead |");
    println!("|---|---|---|---|---|");
    let mut total = 0u64;
    for (name, share, audit_cost, ringer_cost) in classes {
        let audit = audit_ppm * audit_cost / 1_000_000;
        let ringer = r * ringer_cost / 1_000_000;
        let overhead = audit + ringer;
        total += overhead * share / 1_000_000;
        println!(
            "| {name} | {} | {} | {} | {} |",
            pct(share, 1_000_000),
            pct(audit, 1_000_000),
            pct(ringer, 1_000_000),
            pct(overhead, 1_000_000)
        );
    }
    println!("| **mix** | 100% | | | **{}** |", pct(total, 1_000_000));
    let canonical = audit_ppm * 9_200_000 / 1_000_000 + 2 * r;
    println!("\nFor comparison, audits on the canonical path (9.2x for MiniLM) would cost {} for embeddings; 2x and 3x redundancy cost 100% and 200%.", pct(canonical, 1_000_000));
}
