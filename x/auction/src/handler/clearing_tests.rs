//! The reverse auction: who may bid, how many bids an order takes, and who wins at what
//! price, for one order and for many in one block.

use gpuchain_bank::BankRead;
use gpuchain_reputation::{ReputationRead, NEUTRAL_PPM};
use gpuchain_slashing::{slash_provider, FaultKind};
use gpuchain_staking::{module_account as staking_accounts, StakingRead};
use gpuchain_types::{MemState, Overlay};

use crate::test_utils::*;
use crate::{AuctionError, AuctionMsg, AuctionParams, AuctionRead, MsgBid, OrderState};

use super::test_steps::*;

#[test]
fn the_bid_count_is_capped() {
    let mut chain = Chain::new(AuctionParams {
        max_bids_per_order: 2,
        ..test_params()
    });
    let id = post(&mut chain, 1, 1, 1);
    assert_eq!(chain.state.open_orders_for(&addr(10), 2).len(), 1);
    assert!(
        chain.state.open_orders_for(&addr(14), 2).is_empty(),
        "CPU-only"
    );
    assert!(
        chain.state.open_orders_for(&addr(2), 2).is_empty(),
        "not a provider"
    );
    bid(&mut chain, 2, 10, id, 5);
    bid(&mut chain, 2, 11, id, 5);
    assert_eq!(
        chain.exec(
            2,
            12,
            AuctionMsg::Bid(MsgBid {
                order_id: id,
                price: 5
            })
        ),
        Err(AuctionError::TooManyBids(2))
    );
}

#[test]
fn the_auction_table() {
    use crate::clearing::clear;
    let c = ctx(9);
    let (a, b, d, e) = (addr(1), addr(2), addr(3), addr(4));
    let n = NEUTRAL_PPM;
    type Case = (
        &'static str,
        usize,
        Vec<(gpuchain_types::Address, u128, u32)>,
        Option<(Vec<gpuchain_types::Address>, u128)>,
    );
    let cases: Vec<Case> = vec![
        (
            "k=1 lowest wins at the second price",
            1,
            vec![(a, 100, n), (b, 90, n), (d, 120, n)],
            Some((vec![b], 100)),
        ),
        (
            "k=2 pays the third price",
            2,
            vec![(a, 100, n), (b, 90, n), (d, 120, n)],
            Some((vec![b, a], 120)),
        ),
        (
            "only k bids: the highest winning ask, not the max price",
            3,
            vec![(a, 100, n), (b, 90, n), (d, 120, n)],
            Some((vec![b, a, d], 120)),
        ),
        (
            "only k bids with a winner weighted up: still the highest ask",
            2,
            vec![(a, 100, 1_000_000), (b, 90, 0)],
            Some((vec![a, b], 100)),
        ),
        (
            "too few bids",
            4,
            vec![(a, 100, n), (b, 90, n), (d, 120, n)],
            None,
        ),
        ("no bids", 1, vec![], None),
        (
            "reputation beats a lower price",
            1,
            vec![(a, 100, 1_000_000), (b, 90, 0)],
            Some((vec![a], 100)),
        ),
        (
            "never below a winner's ask",
            1,
            vec![(a, 100, 1_000_000), (b, 90, 0), (d, 95, 0)],
            Some((vec![a], 100)),
        ),
        (
            "equal adjusted prices with different scores",
            1,
            vec![(a, 150, 1_000_000), (b, 100, 500_000), (e, 200, 0)],
            None,
        ),
    ];
    for (name, k, bids, expect) in cases {
        let got = clear(&c, 7, k, 150, &bids);
        if name.starts_with("equal") {
            // 150 × 1.0 == 100 × 1.5: a tie, broken by the draw; the loser's raw price is
            // 100 or 150, never below the winner's ask.
            let got = got.unwrap();
            let winner = got.winners[0].provider;
            let draw = |p: gpuchain_types::Address| {
                let mut s = 7u64.to_be_bytes().to_vec();
                s.extend_from_slice(&p.0);
                c.draw("auction/tiebreak", &s)
            };
            let expected = if draw(a) < draw(b) { a } else { b };
            assert_eq!(winner, expected, "{name}");
            assert_eq!(got.clearing_price, 150, "{name}");
            continue;
        }
        let got = got.map(|g| {
            (
                g.winners.iter().map(|w| w.provider).collect(),
                g.clearing_price,
            )
        });
        assert_eq!(got, expect, "{name}");
    }
    // Exact ties: the draw decides, and another block's entropy can decide differently.
    let tie = vec![(a, 100, n), (b, 100, n), (d, 100, n), (e, 100, n)];
    let mut winners = std::collections::BTreeSet::new();
    for h in 0..32 {
        let got = clear(&ctx(h), 7, 1, 150, &tie).unwrap();
        assert_eq!(
            got,
            clear(&ctx(h), 7, 1, 150, &tie).unwrap(),
            "deterministic"
        );
        assert_eq!(got.clearing_price, 100);
        winners.insert(got.winners[0].provider);
    }
    assert!(winners.len() > 1, "the tie-break is not fixed by address");
}

#[test]
fn ineligible_and_jailed_bidders_never_win() {
    let mut chain = Chain::new(test_params());
    let id = post(&mut chain, 1, 1, 2);
    bid(&mut chain, 2, 10, id, 300_000);
    bid(&mut chain, 2, 11, id, 400_000);
    bid(&mut chain, 2, 12, id, 500_000);
    bid(&mut chain, 2, 13, id, 600_000);
    // 10 is jailed after bidding: its bid is skipped at clearing.
    let mut fork = Overlay::new(&chain.state);
    slash_provider(
        &mut fork,
        &ctx(3),
        &addr(10),
        FaultKind::AbandonedLease,
        &addr(1),
        None,
        None,
    )
    .unwrap();
    let (writes, _) = fork.into_parts();
    chain.state.apply(writes);
    for h in 1..=4 {
        chain.end_block(h);
    }
    let winners: Vec<_> = chain
        .state
        .leases_of_order(id)
        .iter()
        .map(|l| l.provider)
        .collect();
    assert_eq!(winners, vec![addr(11), addr(12)]);
    assert_eq!(chain.state.order(id).unwrap().clearing_price, Some(600_000));
    assert_eq!(chain.state.bonded_pool_check(), ());
}

trait BondedPoolCheck {
    fn bonded_pool_check(&self);
}

impl BondedPoolCheck for MemState {
    fn bonded_pool_check(&self) {
        let bonds: u128 = self.providers().iter().map(|p| p.bonded).sum::<u128>()
            + self.validators().iter().map(|v| v.bonded).sum::<u128>();
        assert_eq!(self.balance(&staking_accounts::bonded_pool()), bonds);
    }
}

#[test]
fn reputation_is_neutral_until_something_happens() {
    let chain = Chain::new(test_params());
    assert_eq!(chain.state.score(&addr(10), 1_000), NEUTRAL_PPM);
}

/// Many orders with many bids clearing in one block. `GPUCHAIN_CLEARING_SCALE=100,1000`
/// runs the benchmark's shape (100 orders of 1,000 bids, docs/benchmarks.md); the default is small.
#[test]
fn many_orders_clear_in_one_block_with_the_right_winners() {
    let (orders, bids) = std::env::var("GPUCHAIN_CLEARING_SCALE")
        .ok()
        .and_then(|s| {
            let (a, b) = s.split_once(',')?;
            Some((a.parse::<u64>().ok()?, b.parse::<u32>().ok()?))
        })
        .unwrap_or((10, 60));
    let params = AuctionParams {
        max_bids_per_order: bids,
        ..test_params()
    };
    let mut chain = Chain::with_extra_providers(params, bids);
    for _ in 0..orders {
        chain
            .exec(1, 1, AuctionMsg::PostOrder(order_msg(3, MAX)))
            .unwrap();
    }
    let ids: Vec<u64> = chain.state.orders().iter().map(|o| o.id).collect();
    assert_eq!(ids.len() as u64, orders);
    for &id in &ids {
        for i in 0..bids {
            // Distinct prices in a scrambled order: 1000 + (i × 7919 mod bids) × 10.
            let price = 1_000 + u128::from((u64::from(i) * 7_919) % u64::from(bids)) * 10;
            let msg = AuctionMsg::Bid(MsgBid {
                order_id: id,
                price,
            });
            let mut fork = Overlay::new(&chain.state);
            crate::handler::execute(&mut fork, &ctx(2), &Chain::extra_provider(i), &msg).unwrap();
            let (writes, _) = fork.into_parts();
            chain.state.apply(writes);
        }
    }
    for h in 1..=4 {
        chain.end_block(h);
    }
    for id in ids {
        let order = chain.state.order(id).unwrap();
        assert_eq!(order.state, OrderState::Cleared);
        assert_eq!(order.clearing_price, Some(1_030), "the fourth-lowest price");
        let mut prices: Vec<u128> = chain
            .state
            .leases_of_order(id)
            .iter()
            .map(|l| chain.state.bid(id, &l.provider).unwrap().price)
            .collect();
        prices.sort_unstable();
        assert_eq!(prices, vec![1_000, 1_010, 1_020]);
    }
}
