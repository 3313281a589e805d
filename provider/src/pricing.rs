//! Pricing a bid: cost = rate per GPU-second of this machine's class × GPUs × the job's
//! estimated seconds; the floor is cost plus the minimum margin (and at least `min_price`).
//! An optional script, like Akash's pricing script, receives the order as JSON on stdin and
//! prints a price in ugpu (or nothing, or exits non-zero, to pass on the order); its price
//! is raised to the floor when below it.

use std::io::Write as _;
use std::process::{Command, Stdio};

use gpuchain_auction::Order;
use gpuchain_jobspec::{JobSpec, ModelArch};
use gpuchain_types::Amount;
use serde::Serialize;

use crate::config::PricingConfig;

/// Errors of pricing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PricingError {
    /// No rate for this class and no `default`.
    #[error("no price per GPU-second for class {0:?} and no `default` in [pricing]")]
    NoRate(String),
    /// The script could not be run.
    #[error("pricing script {0}: {1}")]
    Script(String, String),
}

/// A decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Quote {
    /// Bid this price.
    Bid(Amount),
    /// Do not bid (why).
    Pass(String),
}

/// Estimated run time of a job on this agent, in whole seconds (at least 1): a per-arch
/// base plus a rate per MiB of input and weights. Crude, documented in docs/provider.md.
pub(crate) fn estimate_seconds(job: &JobSpec) -> u64 {
    let mib = |b: u64| b.div_ceil(1 << 20);
    match job {
        JobSpec::Inference(s) => {
            let (base, per_mib) = match s.arch {
                ModelArch::DigitsMlp | ModelArch::DigitsCnn => (1, 1),
                ModelArch::MiniLmEmbedder | ModelArch::MiniLmClassifier => (5, 20),
                ModelArch::LlamaDecoder | ModelArch::LlamaGguf => (10, 2),
            };
            base + per_mib * (mib(s.input.size) + mib(s.weights.size) / 10)
        }
        JobSpec::Training(t) if t.arch == ModelArch::MiniLmClassifier => {
            // Encoding the shard once (about 40 sentences a second per MiB of dataset), then
            // one layer forward and back per example of every local step.
            let steps = u64::from(t.rounds) * u64::from(t.local_steps);
            30 + 25 * mib(t.dataset.size) + steps * u64::from(t.batch_size) / 40
        }
        JobSpec::Training(t) => {
            let steps = u64::from(t.rounds) * u64::from(t.local_steps);
            1 + steps / 50
        }
    }
}

/// What the script sees on stdin.
#[derive(Serialize)]
struct ScriptInput<'a> {
    order: &'a Order,
    class: &'a str,
    gpu_count: u32,
    estimated_seconds: u64,
    cost: Amount,
    floor: Amount,
}

/// Prices `order` for a machine of `class` with `gpu_count` GPUs.
pub(crate) fn quote(
    config: &PricingConfig,
    class: &str,
    gpu_count: u32,
    order: &Order,
) -> Result<Quote, PricingError> {
    let rate = config
        .per_gpu_second
        .get(class)
        .or_else(|| config.per_gpu_second.get("default"))
        .copied()
        .map(u128::from)
        .ok_or_else(|| PricingError::NoRate(class.to_string()))?;
    let seconds = estimate_seconds(&order.job);
    let units = u128::from(gpu_count.max(1));
    let cost = rate
        .saturating_mul(units)
        .saturating_mul(u128::from(seconds));
    let floor = cost
        .saturating_mul(1_000_000 + u128::from(config.min_margin_ppm))
        .div_ceil(1_000_000)
        .max(u128::from(config.min_price));
    let price = match &config.script {
        None => floor,
        Some(script) => {
            let input = ScriptInput {
                order,
                class,
                gpu_count,
                estimated_seconds: seconds,
                cost,
                floor,
            };
            match run_script(script, &input)? {
                Some(p) => p.max(floor),
                None => return Ok(Quote::Pass("pricing script passed".into())),
            }
        }
    };
    if price > order.max_price_per_replica {
        return Ok(Quote::Pass(format!(
            "our price {price} is above the order's max {}",
            order.max_price_per_replica
        )));
    }
    Ok(Quote::Bid(price))
}

fn run_script(
    script: &std::path::Path,
    input: &ScriptInput<'_>,
) -> Result<Option<Amount>, PricingError> {
    let name = script.display().to_string();
    let err = |e: &dyn std::fmt::Display| PricingError::Script(name.clone(), e.to_string());
    let json = serde_json::to_vec(input).map_err(|e| err(&e))?;
    let mut child = Command::new(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| err(&e))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(&json).map_err(|e| err(&e))?;
    }
    let out = child.wait_with_output().map_err(|e| err(&e))?;
    if !out.status.success() {
        return Ok(None);
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<Amount>()
        .map(Some)
        .map_err(|_| err(&format!("printed {text:?}, not an integer price in ugpu")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuchain_auction::{ClassRequirement, OrderState, Requirements, TooFewBids};
    use gpuchain_jobspec::{BlobRef, InferenceSpec};
    use gpuchain_types::Address;
    use std::collections::BTreeMap;

    pub(crate) fn order(max: Amount) -> Order {
        let blob = BlobRef {
            blake3: [1; 32],
            size: 1_000,
            urls: vec!["http://127.0.0.1:9/blob/x".into()],
        };
        Order {
            id: 4,
            client: Address([2; 20]),
            job: JobSpec::Inference(InferenceSpec {
                arch: ModelArch::DigitsMlp,
                weights: blob.clone(),
                tokenizer: None,
                input: blob,
                batch_size: 64,
                llama: None,
                generation: None,
                tolerance: None,
            }),
            requirements: Requirements {
                class: ClassRequirement::Any,
                gpu_model: None,
                min_vram_mib: 0,
                min_gpu_count: 0,
                min_cuda_version: 0,
                region: None,
            },
            replicas: 1,
            max_price_per_replica: max,
            exec_deadline_blocks: 30,
            on_too_few_bids: TooFewBids::Refund,
            created_height: 3,
            bid_end_height: 23,
            reopened: false,
            verification_fee: 0,
            clearing_price: None,
            escrowed: max,
            state: OrderState::Open,
            dispute_reserve: 0,
        }
    }

    fn config(script: Option<std::path::PathBuf>) -> PricingConfig {
        let mut rates = BTreeMap::new();
        rates.insert("cpu".to_string(), 100_000);
        rates.insert("default".to_string(), 1_000_000);
        PricingConfig {
            per_gpu_second: rates,
            min_margin_ppm: 100_000,
            min_price: 1,
            script,
        }
    }

    #[test]
    fn the_strategy_prices_by_class_with_the_margin_and_respects_the_max() {
        let o = order(1_000_000);
        // digits MLP, 1 KB input: 2 s estimated.
        assert_eq!(estimate_seconds(&o.job), 2);
        assert_eq!(
            quote(&config(None), "cpu", 0, &o).unwrap(),
            Quote::Bid(220_000)
        );
        let q = quote(&config(None), "NVIDIA H200", 1, &o).unwrap();
        assert!(
            matches!(q, Quote::Pass(ref r) if r.contains("above the order's max")),
            "{q:?}"
        );
        let mut c = config(None);
        c.per_gpu_second.remove("default");
        assert!(quote(&c, "NVIDIA H200", 1, &o).is_err());
    }

    #[test]
    fn a_script_sees_the_order_and_can_raise_or_pass_but_not_undercut() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, body: &str| {
            use std::os::unix::fs::PermissionsExt;
            let p = dir.path().join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            p
        };
        let o = order(1_000_000);
        let high = write(
            "high.sh",
            "grep -q '\"estimated_seconds\":2' && echo 500000",
        );
        assert_eq!(
            quote(&config(Some(high)), "cpu", 0, &o).unwrap(),
            Quote::Bid(500_000)
        );
        let low = write("low.sh", "cat >/dev/null; echo 5");
        assert_eq!(
            quote(&config(Some(low)), "cpu", 0, &o).unwrap(),
            Quote::Bid(220_000)
        );
        let pass = write("pass.sh", "cat >/dev/null; exit 1");
        assert!(matches!(
            quote(&config(Some(pass)), "cpu", 0, &o).unwrap(),
            Quote::Pass(_)
        ));
        let junk = write("junk.sh", "cat >/dev/null; echo cheap");
        assert!(quote(&config(Some(junk)), "cpu", 0, &o).is_err());
    }
}
