//! The demo's books: who was paid, who was slashed, reputations, supply conservation, the
//! validators' app hashes, the training's compression and the verification overhead.

use std::fmt;
use std::time::Instant;

use anyhow::Result;
use gpuchain_reputation::ReputationRead;
use serde::Serialize;

use super::jobs::Training;
use super::{DemoOptions, Market, PROVIDERS};
use crate::{amount, slash_records, supply};

/// One lease in the summary.
#[derive(Clone, Debug, Serialize)]
pub struct LeaseRow {
    /// Lease id.
    pub lease_id: u64,
    /// Provider name.
    pub provider: String,
    /// Final state (`paid`, `faulted`, …).
    pub state: String,
    /// Clearing price, ugpu.
    pub price: u128,
    /// The first verdict on it, if it was verified.
    pub verified_by: Option<String>,
    /// Seconds from posting the order to seeing the lease paid.
    pub paid_after_secs: Option<f64>,
    /// Height the payment was released at.
    pub payout_height: Option<u64>,
    /// The result hash the provider revealed (hex): for training, its transcript root.
    pub result_hash: Option<String>,
}

/// One order in the summary.
#[derive(Clone, Debug, Serialize)]
pub struct JobRow {
    /// Order id.
    pub order_id: u64,
    /// What it was.
    pub label: String,
    /// k.
    pub replicas: u32,
    /// Price per replica, ugpu.
    pub clearing_price: u128,
    /// Posted at.
    pub posted_height: u64,
    /// Its leases.
    pub leases: Vec<LeaseRow>,
}

/// One provider's account of the run.
#[derive(Clone, Debug, Serialize)]
pub struct ProviderRow {
    /// Name.
    pub name: String,
    /// Leases paid.
    pub paid_leases: u32,
    /// Total received, ugpu: price minus the take rate (new providers earn no loyalty bonus).
    pub earned: u128,
    /// Total slashed from its bond, ugpu.
    pub slashed: u128,
    /// Reputation score, ppm.
    pub reputation_ppm: u32,
    /// Seconds it spent executing jobs.
    pub execute_seconds: f64,
}

/// Everything the demo did.
#[derive(Clone, Debug, Serialize)]
pub struct DemoReport {
    /// Orders and their leases.
    pub jobs: Vec<JobRow>,
    /// Providers.
    pub providers: Vec<ProviderRow>,
    /// Final test accuracy of the trained MLP.
    pub training_accuracy: f64,
    /// Dense bytes ÷ sent bytes over the whole training.
    pub compression_ratio: f64,
    /// Bytes the workers sent, all rounds.
    pub training_bytes_sent: u64,
    /// Dense f32 equivalent.
    pub training_dense_bytes: u64,
    /// The transcript root the providers committed.
    pub transcript_root: String,
    /// Verifier execution seconds ÷ provider execution seconds in this run.
    pub verification_overhead: f64,
    /// Supply before and after, and what slashes burned.
    pub supply_start: u128,
    /// Supply at the end.
    pub supply_end: u128,
    /// Burned by slashes.
    pub burned: u128,
    /// The app hash every validator agreed on at the end.
    pub app_hash: String,
    /// Validators checked.
    pub validators: usize,
    /// The client's balance, proven against a header the validators signed (light client).
    pub client_balance: u128,
    /// Height of that proof.
    pub proven_at: u64,
    /// What the sentiment fine-tuning order showed, when there was one.
    pub fine_tuning: Option<super::jobs::FineTuning>,
    /// What SmolLM2 answered the chat order, when there was one.
    pub chat_answer: Option<String>,
    /// What serving through the gateway showed, when it ran.
    pub serving: Option<super::ServingReport>,
    /// Wall time of the run, seconds.
    pub wall_secs: f64,
    /// Where the logs are (kept when asked).
    pub logs: String,
}

fn seconds_in(status: &serde_json::Value, list: &str) -> f64 {
    let sum = |items: Vec<&serde_json::Value>| {
        items
            .iter()
            .filter_map(|v| v["execute_seconds"].as_f64())
            .fold(0.0, |a, b| a + b)
    };
    match &status[list] {
        serde_json::Value::Object(map) => sum(map.values().collect()),
        serde_json::Value::Array(items) => sum(items.iter().collect()),
        _ => 0.0,
    }
}

pub(crate) async fn collect(
    m: &Market,
    opts: &DemoOptions,
    jobs: Vec<JobRow>,
    training: Training,
    supply_start: u128,
    started: Instant,
) -> Result<DemoReport> {
    let records = slash_records(&m.node)?;
    let burned: u128 = records
        .iter()
        .map(|r| amount(&r["outcome"]["burned"]))
        .sum();
    let height = m.chain.latest_height().await?;
    let reputation = m.chain.snapshot("reputation/").await?;
    let take_ppm = m
        .chain
        .get::<gpuchain_auction::AuctionParams>(gpuchain_auction::state_key::params())
        .await?
        .unwrap_or_default()
        .take_rate_ppm;
    let mut providers = Vec::new();
    let mut provider_seconds = 0.0;
    for (name, _) in PROVIDERS {
        let address = m.address(name)?;
        let leases = jobs
            .iter()
            .flat_map(|j| j.leases.iter())
            .filter(|l| l.provider == name);
        let paid: Vec<&LeaseRow> = leases.filter(|l| l.state == "paid").collect();
        let status = m
            .providers
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, a)| a.status().ok())
            .unwrap_or_default();
        let execute_seconds = seconds_in(&status, "leases");
        provider_seconds += execute_seconds;
        providers.push(ProviderRow {
            name: name.to_string(),
            paid_leases: paid.len() as u32,
            earned: paid
                .iter()
                .map(|l| l.price - l.price * u128::from(take_ppm) / 1_000_000)
                .sum(),
            slashed: records
                .iter()
                .filter(|r| r["subject"] == address.to_string().as_str())
                .map(|r| amount(&r["outcome"]["slashed"]))
                .sum(),
            reputation_ppm: reputation.score(&address, height),
            execute_seconds,
        });
    }
    let verifier_seconds = m
        .verifier
        .status()
        .map(|s| seconds_in(&s, "cases"))
        .unwrap_or(0.0);
    let sent: u64 = training.progress.iter().map(|p| p.bytes_sent).sum();
    let dense: u64 = training.progress.iter().map(|p| p.dense_bytes).sum();
    let light = gpuchain_client::LightClient::open(m.dir.join("client").join("light.json"))?;
    let proving = m.chain.clone().with_light_client(light);
    let proof = proving
        .query_verified(&gpuchain_bank::state_key::account(&m.address("client")?))
        .await?;
    let client_balance = match &proof.value {
        Some(bytes) => borsh::from_slice::<gpuchain_bank::Account>(bytes)?.balance,
        None => 0,
    };
    let at = m.chain.latest_height().await?;
    let nodes: Vec<usize> = (0..opts.validators).collect();
    let app_hash = m.net.assert_same_app_hash(&nodes, at).await?;
    Ok(DemoReport {
        jobs,
        providers,
        training_accuracy: training.progress.last().map_or(0.0, |p| p.test_accuracy),
        compression_ratio: dense as f64 / sent.max(1) as f64,
        training_bytes_sent: sent,
        training_dense_bytes: dense,
        transcript_root: training.transcript_root,
        verification_overhead: verifier_seconds / provider_seconds.max(1e-9),
        supply_start,
        supply_end: supply(&m.chain).await?,
        burned,
        app_hash,
        validators: opts.validators,
        client_balance,
        proven_at: proof.height,
        wall_secs: started.elapsed().as_secs_f64(),
        logs: m.net.logs_dir().display().to_string(),
        chat_answer: None,
        fine_tuning: None,
        serving: None,
    })
}

impl fmt::Display for DemoReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(t) = &self.fine_tuning {
            let last = t.progress.last().map_or(0.0, |p| p.test_accuracy);
            let up: u64 = t.progress.iter().map(|p| p.bytes_sent).sum();
            let down: u64 = t.progress.iter().map(|p| 3 * p.broadcast_bytes).sum();
            let dense: u64 = t.progress.iter().map(|p| p.dense_bytes).sum();
            writeln!(
                f,
                "\nMiniLM fine-tuned on review sentiment over 3 providers: test accuracy {:.1}% \
                 -> {:.1}% in {} rounds; {} B up + {} B down vs {} B dense each way ({:.0}x); \
                 transcript root {}",
                t.start_accuracy * 100.0,
                last * 100.0,
                t.progress.len(),
                up,
                down,
                dense,
                2.0 * dense as f64 / (up + down).max(1) as f64,
                t.transcript_root
            )?;
            for (text, class) in &t.classified {
                writeln!(f, "  classified through the market: {text:?}: {class}")?;
            }
        }
        if let Some(answer) = &self.chat_answer {
            writeln!(
                f,
                "\nSmolLM2, asked \"What is the capital of France?\": {answer:?}"
            )?;
        }
        if let Some(s) = &self.serving {
            writeln!(
                f,
                "served through the gateway ({}): {:?}; {}'s endpoint killed mid-answer, the \
                 answer {} on another provider",
                s.gateway,
                s.answer,
                s.killed,
                if s.resumed_answer_whole {
                    "finished whole"
                } else {
                    "NOT finished whole"
                }
            )?;
            let paid: u128 = s.leases.iter().map(|l| l.paid).sum();
            let requests: u64 = s.leases.iter().map(|l| l.requests).sum();
            writeln!(
                f,
                "serving leases: {} on two orders, {requests} requests settled on chain, {paid} \
                 ugpu paid to providers; {} {}; serving escrow after both orders closed: {} ugpu",
                s.leases.len(),
                s.killed,
                if s.killed_kept_leases {
                    "answered the report and kept its leases"
                } else {
                    "LOST a lease"
                },
                s.escrow_after
            )?;
        }
        writeln!(f, "\njobs")?;
        writeln!(
            f,
            "{:<7} {:<40} {:>3} {:>12}  leases",
            "order", "job", "k", "price/ugpu"
        )?;
        for j in &self.jobs {
            let leases: Vec<String> = j
                .leases
                .iter()
                .map(|l| {
                    let checked = l
                        .verified_by
                        .as_deref()
                        .map(|v| format!(", checked by {v}"))
                        .unwrap_or_default();
                    let time = l
                        .paid_after_secs
                        .map(|s| format!(", paid {s:.1} s after posting"))
                        .unwrap_or_default();
                    format!("{} {}{checked}{time}", l.provider, l.state)
                })
                .collect();
            writeln!(
                f,
                "{:<7} {:<40} {:>3} {:>12}  {}",
                j.order_id,
                j.label,
                j.replicas,
                j.clearing_price,
                leases.join("; ")
            )?;
        }
        writeln!(f, "\nproviders")?;
        writeln!(
            f,
            "{:<6} {:>5} {:>14} {:>14} {:>11} {:>10}",
            "name", "paid", "earned/ugpu", "slashed/ugpu", "reputation", "compute/s"
        )?;
        for p in &self.providers {
            writeln!(
                f,
                "{:<6} {:>5} {:>14} {:>14} {:>10.1}% {:>10.2}",
                p.name,
                p.paid_leases,
                p.earned,
                p.slashed,
                f64::from(p.reputation_ppm) / 10_000.0,
                p.execute_seconds
            )?;
        }
        writeln!(f, "\ntraining: test accuracy {:.1}%, workers sent {} B vs {} B dense ({:.0}× less), transcript root {}",
            self.training_accuracy * 100.0, self.training_bytes_sent, self.training_dense_bytes, self.compression_ratio, self.transcript_root)?;
        writeln!(
            f,
            "verification overhead in this run: {:.1}% (verifier compute ÷ provider compute)",
            self.verification_overhead * 100.0
        )?;
        writeln!(
            f,
            "supply: {} → {} ugpu; burned by slashes {} ({})",
            self.supply_start,
            self.supply_end,
            self.burned,
            if self.supply_start == self.supply_end + self.burned {
                "conserved to the unit"
            } else {
                "NOT CONSERVED"
            }
        )?;
        writeln!(
            f,
            "app hash on all {} validators: {}",
            self.validators, self.app_hash
        )?;
        writeln!(
            f,
            "client balance {} ugpu, proven at height {} against a header the validators signed",
            self.client_balance, self.proven_at
        )?;
        writeln!(
            f,
            "wall time {:.0} s; logs in {}",
            self.wall_secs, self.logs
        )
    }
}
