//! `gpuchain-provider status`: the agent's local state (readable while it runs: the file is
//! replaced atomically) and, when the node answers, the account on chain.

use anyhow::Result;
use gpuchain_agent_kit::args::BasicArgs;
use gpuchain_types::Amount;
use serde::Serialize;

use super::Output;
use crate::chain::Chain;
use crate::config::Config;
use crate::state::{BidRecord, Counters, LeaseRecord, State};

#[derive(Serialize)]
struct OnChain {
    balance: Amount,
    bonded: Option<Amount>,
    registered: bool,
}

#[derive(Serialize)]
struct Status {
    provider: String,
    last_height: u64,
    slots_used: u32,
    capacity_slots: u32,
    counters: Counters,
    bids: Vec<BidRecord>,
    leases: Vec<LeaseRecord>,
    chain: Option<OnChain>,
    chain_error: Option<String>,
}

pub(super) async fn run(a: BasicArgs<Config>) -> Result<()> {
    let (config, state): (Config, State) = a.load()?;
    let chain = Chain::open(&config.chain, &config.key)?;
    let on_chain = async {
        let provider = chain.me().await?;
        anyhow::Ok(OnChain {
            balance: chain.balance().await?,
            bonded: provider.as_ref().map(|p| p.bonded),
            registered: provider.is_some(),
        })
    }
    .await;
    let (chain_info, chain_error) = match on_chain {
        Ok(c) => (Some(c), None),
        Err(e) => (None, Some(format!("{e:#}"))),
    };
    let status = Status {
        provider: chain.address.to_string(),
        last_height: state.last_height,
        slots_used: state.slots_used(),
        capacity_slots: config.capacity.max_concurrent_jobs,
        counters: state.counters.clone(),
        bids: state.bids.values().cloned().collect(),
        leases: state.leases.values().cloned().collect(),
        chain: chain_info,
        chain_error,
    };
    match a.output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&status)?),
        Output::Text => print_text(&status),
    }
    Ok(())
}

fn print_text(s: &Status) {
    println!("provider  {}", s.provider);
    println!("height    {} (last processed)", s.last_height);
    println!(
        "capacity  {} of {} slots in use",
        s.slots_used, s.capacity_slots
    );
    let c = &s.counters;
    println!(
        "counters  bids {} (failed {}), skipped {}, wins {}, losses {}, jobs {} ok / {} failed, earned {} ugpu",
        c.bids, c.bids_failed, c.orders_skipped, c.wins, c.losses, c.jobs_completed, c.jobs_failed, c.earnings
    );
    match (&s.chain, &s.chain_error) {
        (Some(ch), _) => println!(
            "chain     balance {} ugpu, bonded {}",
            ch.balance,
            ch.bonded
                .map_or("not registered".to_string(), |b| format!("{b} ugpu"))
        ),
        (None, Some(e)) => println!("chain     unreachable: {e}"),
        _ => {}
    }
    for b in &s.bids {
        println!(
            "bid       order {} at {} ugpu: {:?}",
            b.order_id, b.price, b.status
        );
    }
    for l in &s.leases {
        println!(
            "lease     {} (order {}): {:?}, chain {}, paid {}{}",
            l.lease_id,
            l.order_id,
            l.stage,
            l.chain_state,
            l.paid,
            l.reason
                .as_deref()
                .map(|r| format!(" — {r}"))
                .unwrap_or_default()
        );
    }
}
