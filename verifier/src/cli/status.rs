//! `gpuchain-verifier status`: the local state (cases, ringers, counters) and the on-chain
//! verifier record.

use anyhow::Result;
use clap::Args;

use super::{ConfigArg, Output};
use crate::chain::Chain;
use crate::config::{AgentConfig, Config};
use crate::state::State;
use crate::store::JsonFile;

/// Arguments of `status`.
#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    output: Output,
}

pub(super) async fn run(a: StatusArgs) -> Result<()> {
    let config = Config::load(&a.config.config)?;
    let state: State = JsonFile::new(config.state_path()).load()?;
    let chain = Chain::connect(&config.chain.node, &config.key.home, &config.key.name)?;
    let on_chain = chain.me().await.ok().flatten();
    let cases: Vec<_> = state.cases.values().collect();
    let ringers: Vec<_> = state.ringers.values().collect();
    match a.output {
        Output::Json => {
            let doc = serde_json::json!({
                "verifier": chain.address.to_string(),
                "last_height": state.last_height,
                "on_chain": on_chain,
                "cases": cases,
                "ringers": ringers,
                "counters": state.counters,
            });
            println!("{}", serde_json::to_string_pretty(&doc)?);
        }
        Output::Text => {
            println!(
                "verifier {} (last block {})",
                chain.address, state.last_height
            );
            match &on_chain {
                Some(v) => println!(
                    "  bonded {} ugpu, verdicts {}, misses {}, overturned {}, jailed until {}",
                    v.bonded, v.verdicts, v.misses, v.overturned, v.jailed_until
                ),
                None => println!("  not registered"),
            }
            println!("cases:");
            for c in &cases {
                println!(
                    "  lease {} round {}: {:?} {} ({}) {}",
                    c.lease_id,
                    c.round,
                    c.stage,
                    c.verdict.as_deref().unwrap_or("-"),
                    c.backend,
                    c.detail
                );
            }
            println!("ringers:");
            for r in &ringers {
                println!(
                    "  #{} {:?} challenge {:?} order {:?} passed {} failed {} {}",
                    r.id,
                    r.stage,
                    r.challenge_id,
                    r.order_id,
                    r.passed,
                    r.failed,
                    r.reason.as_deref().unwrap_or("")
                );
            }
            println!("counters: {}", serde_json::to_string(&state.counters)?);
        }
    }
    Ok(())
}
