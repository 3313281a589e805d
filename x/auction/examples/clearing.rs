//! Clearing benchmark: `ORDERS` orders with `BIDS` bids each all clear in one end-block.
//!
//! `cargo run --release -p gpuchain-auction --features test-utils --example clearing -- 100 1000`
//! prints the time of the clearing end-block (median of 5 runs) against the time of an
//! end-block with nothing to clear, on the in-memory state the module tests use.

// A benchmark measures wall time; it never runs inside the state machine.
#![allow(clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use gpuchain_auction::test_utils::{ctx, order_msg, test_params, Chain};
use gpuchain_auction::{AuctionMsg, AuctionParams, AuctionRead, MsgBid, OrderState};
use gpuchain_types::Overlay;

fn setup(orders: u64, bids: u32) -> Chain {
    let params = AuctionParams {
        max_bids_per_order: bids,
        ..test_params()
    };
    let mut chain = Chain::with_extra_providers(params, bids);
    for _ in 0..orders {
        chain
            .exec(1, 1, AuctionMsg::PostOrder(order_msg(3, 1_000_000)))
            .expect("post");
    }
    chain.end_block(1);
    let ids: Vec<u64> = chain.state.orders().iter().map(|o| o.id).collect();
    for id in ids {
        let mut fork = Overlay::new(&chain.state);
        for i in 0..bids {
            let price = 1_000 + u128::from((u64::from(i) * 7_919) % u64::from(bids)) * 10;
            let msg = AuctionMsg::Bid(MsgBid {
                order_id: id,
                price,
            });
            gpuchain_auction::handler::execute(&mut fork, &ctx(2), &Chain::extra_provider(i), &msg)
                .expect("bid");
        }
        let (writes, _) = fork.into_parts();
        chain.state.apply(writes);
    }
    chain
}

/// Times `end_block` at `height` on a fork of the chain's state.
fn time_end_block(chain: &Chain, height: u64) -> (Duration, usize) {
    let mut fork = Overlay::new(&chain.state);
    let start = Instant::now();
    gpuchain_auction::end_block(&mut fork, &ctx(height)).expect("end block");
    let took = start.elapsed();
    let (writes, _) = fork.into_parts();
    (took, writes.len())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let orders: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(100);
    let bids: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1_000);
    let started = Instant::now();
    let chain = setup(orders, bids);
    eprintln!(
        "set up {orders} orders × {bids} bids in {:.1?}",
        started.elapsed()
    );
    let clear_at = chain
        .state
        .orders()
        .first()
        .map(|o| o.bid_end_height)
        .expect("an order");
    let idle: Vec<Duration> = (0..5).map(|_| time_end_block(&chain, 2).0).collect();
    let mut runs = Vec::new();
    let mut writes = 0;
    for _ in 0..5 {
        let (t, w) = time_end_block(&chain, clear_at);
        runs.push(t);
        writes = w;
    }
    // Check the clearing really happened on a copy.
    let mut check = setup(1, bids.min(50));
    for h in 2..=clear_at {
        check.end_block(h);
    }
    let cleared = check
        .state
        .orders()
        .iter()
        .all(|o| o.state == OrderState::Cleared);
    assert!(cleared, "orders cleared");
    println!("| orders × bids | clearing end-block (median of 5) | idle end-block | writes |");
    println!("|---|---|---|---|");
    println!(
        "| {orders} × {bids} | {:.2?} | {:.2?} | {writes} |",
        median(runs),
        median(idle)
    );
}
