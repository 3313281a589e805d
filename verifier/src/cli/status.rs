//! `gpuchain-verifier status`: the local state (cases, ringers, counters) and the on-chain
//! verifier record.

use anyhow::Result;
use gpuchain_agent_kit::args::BasicArgs;
use gpuchain_agent_kit::cli::Output;

use crate::chain::Chain;
use crate::config::Config;
use crate::state::State;

pub(super) async fn run(a: BasicArgs<Config>) -> Result<()> {
    let (config, state): (Config, State) = a.load()?;
    let chain = Chain::open(&config.chain, &config.key)?;
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
