//! A seeded simulation of the market with staking, slashing and reputation: random weighted
//! operations (posting, bidding, honest and dishonest commits and reveals, cancels, verdicts,
//! outside slashes, withdrawals; a failing one must leave no writes), the end-block after
//! each round, and invariants after every block: balances == supply, only slashes burn,
//! escrow == open obligations, rewards pool == accrued rewards. Then a liveness phase with no
//! new orders in which every order must settle, expire or be cancelled and escrow must empty.
//! The seed is printed on failure; set `GPUCHAIN_SIM_SEEDS` to run more seeds.

use std::collections::BTreeMap;

use gpuchain_bank::BankRead;
use gpuchain_slashing::{slash_provider, FaultKind};
use gpuchain_staking::StakingRead;
use gpuchain_types::Overlay;

use crate::test_utils::*;
use crate::{
    apply_verdict, commitment, module_account, AuctionMsg, AuctionParams, AuctionRead, LeaseState,
    MsgBid, MsgCancelOrder, MsgCommitResult, MsgRevealResult, MsgWithdrawRewards, OrderState,
    TooFewBids, Verdict,
};

/// splitmix64: a tiny deterministic generator for tests only.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> Option<T> {
        let i = usize::try_from(self.below(u64::try_from(items.len()).ok()?)).ok()?;
        items.get(i).copied()
    }
}

struct Sim {
    chain: Chain,
    /// What each lease's provider committed to.
    committed: BTreeMap<u64, [u8; 32]>,
    outcomes: (u64, u64),
}

impl Sim {
    fn record<E>(&mut self, r: Result<(), E>) {
        if r.is_ok() {
            self.outcomes.0 += 1;
        } else {
            self.outcomes.1 += 1;
        }
    }

    fn exec(&mut self, h: u64, signer: u8, msg: AuctionMsg) {
        let r = self.chain.exec(h, signer, msg);
        self.record(r);
    }

    fn leases_in(&self, state: LeaseState) -> Vec<(u64, u8)> {
        self.chain
            .state
            .leases()
            .into_iter()
            .filter(|l| l.state == state)
            .map(|l| (l.id, l.provider.0[0]))
            .collect()
    }

    fn commit(&mut self, h: u64, lease: u64, provider: u8, honest: bool) {
        let order = self.chain.state.lease(lease).map_or(0, |l| l.order_id);
        let result = if honest {
            *blake3::hash(&order.to_be_bytes()).as_bytes()
        } else {
            [provider; 32]
        };
        let msg = AuctionMsg::CommitResult(MsgCommitResult {
            lease_id: lease,
            commitment: commitment(&result, &addr(provider), &[provider; 32]),
        });
        if self.chain.exec(h, provider, msg).is_ok() {
            self.committed.insert(lease, result);
            self.outcomes.0 += 1;
        } else {
            self.outcomes.1 += 1;
        }
    }

    fn reveal(&mut self, h: u64, lease: u64, provider: u8, wrong_salt: bool) {
        let result = self.committed.get(&lease).copied().unwrap_or_default();
        let salt = if wrong_salt { [0; 32] } else { [provider; 32] };
        let msg = AuctionMsg::RevealResult(MsgRevealResult {
            lease_id: lease,
            result_hash: result,
            salt,
        });
        self.exec(h, provider, msg);
    }

    fn random_op(&mut self, rng: &mut Rng, h: u64) {
        match rng.below(16) {
            0 | 1 => {
                let client = rng.pick(&CLIENTS).unwrap_or(1);
                let k = 1 + u32::try_from(rng.below(3)).unwrap_or(0);
                let mut msg = order_msg(k, 100_000 + u128::from(rng.below(2_000_000)));
                msg.bid_window_blocks = 1 + rng.below(4);
                msg.exec_deadline_blocks = 2 + rng.below(6);
                if rng.below(2) == 0 {
                    msg.on_too_few_bids = TooFewBids::ReopenOnce;
                }
                self.exec(h, client, AuctionMsg::PostOrder(msg));
            }
            2..=4 => {
                let open: Vec<(u64, u128)> = self
                    .chain
                    .state
                    .orders()
                    .into_iter()
                    .filter(|o| o.state == OrderState::Open)
                    .map(|o| (o.id, o.max_price_per_replica))
                    .collect();
                let (Some((id, max)), Some(p)) = (rng.pick(&open), rng.pick(&PROVIDERS)) else {
                    return;
                };
                let price = 1 + u128::from(rng.below(u64::try_from(max / 4 * 5).unwrap_or(1)));
                let msg = AuctionMsg::Bid(MsgBid {
                    order_id: id,
                    price,
                });
                self.exec(h, p, msg);
            }
            5..=8 => {
                if let Some((lease, p)) = rng.pick(&self.leases_in(LeaseState::Open)) {
                    // Some providers never commit: their leases are missed.
                    match rng.below(6) {
                        0 => {}
                        1 => self.commit(h, lease, p, false),
                        _ => self.commit(h, lease, p, true),
                    }
                }
            }
            9..=12 => {
                if let Some((lease, p)) = rng.pick(&self.leases_in(LeaseState::Committed)) {
                    let wrong = rng.below(8) == 0;
                    self.reveal(h, lease, p, wrong);
                }
            }
            13 => {
                let client = rng.pick(&CLIENTS).unwrap_or(1);
                let id = rng.below(self.chain.state.orders().len() as u64 + 1);
                self.exec(
                    h,
                    client,
                    AuctionMsg::CancelOrder(MsgCancelOrder { order_id: id }),
                );
            }
            14 => {
                let pending: Vec<u64> = self
                    .chain
                    .state
                    .leases()
                    .into_iter()
                    .filter(|l| l.state.takes_verdict())
                    .map(|l| l.id)
                    .collect();
                let verdict = if rng.below(2) == 0 {
                    Verdict::Honest
                } else {
                    Verdict::Faulty {
                        prover: Some(addr(3)),
                        costs: rng.below(3).into(),
                    }
                };
                if let Some(lease) = rng.pick(&pending) {
                    self.fork(|s| apply_verdict(s, &ctx(h), lease, verdict, &[]).map_err(|_| ()));
                } else {
                    let p = rng.pick(&PROVIDERS).unwrap_or(10);
                    self.fork(|s| {
                        slash_provider(
                            s,
                            &ctx(h),
                            &addr(p),
                            FaultKind::AbandonedLease,
                            &addr(1),
                            None,
                            None,
                        )
                        .map(|_| ())
                        .map_err(|_| ())
                    });
                }
            }
            _ => self.exec(
                h,
                VALIDATOR,
                AuctionMsg::WithdrawRewards(MsgWithdrawRewards {}),
            ),
        }
    }

    fn fork(&mut self, op: impl FnOnce(&mut Overlay<'_>) -> Result<(), ()>) {
        let mut fork = Overlay::new(&self.chain.state);
        let r = op(&mut fork);
        if r.is_ok() {
            let (writes, _) = fork.into_parts();
            self.chain.state.apply(writes);
        } else {
            assert!(fork.writes().is_empty(), "a failed operation left writes");
        }
        self.record(r);
    }
}

/// Runs one seed; returns (ok, failed, leases paid, leases missed).
fn run(seed: u64) -> (u64, u64, usize, usize) {
    let mut rng = Rng(seed);
    let params = AuctionParams {
        audit_min_ppm: 100_000,
        audit_max_ppm: 500_000,
        ..test_params()
    };
    let mut sim = Sim {
        chain: Chain::new(params),
        committed: BTreeMap::new(),
        outcomes: (0, 0),
    };
    let mut h = 1;
    for _ in 0..120 {
        for _ in 0..rng.below(8) {
            sim.random_op(&mut rng, h);
        }
        sim.chain.end_block(h);
        h += 1;
    }
    // Liveness: no new orders; providers commit and reveal honestly where they can.
    for _ in 0..60 {
        for (lease, p) in sim.leases_in(LeaseState::Open) {
            sim.commit(h, lease, p, true);
        }
        for (lease, p) in sim.leases_in(LeaseState::Committed) {
            sim.reveal(h, lease, p, false);
        }
        sim.chain.end_block(h);
        h += 1;
    }
    let s = &sim.chain.state;
    for order in s.orders() {
        assert!(
            order.state.is_closed(),
            "order {} is still {:?}",
            order.id,
            order.state
        );
    }
    assert_eq!(s.balance(&module_account::escrow()), 0, "escrow emptied");
    for p in PROVIDERS {
        assert_eq!(s.open_leases(&addr(p)), 0, "provider {p} has no open lease");
    }
    let leases = s.leases();
    let paid = leases
        .iter()
        .filter(|l| l.state == LeaseState::Paid)
        .count();
    let missed = leases
        .iter()
        .filter(|l| l.state == LeaseState::Missed)
        .count();
    (sim.outcomes.0, sim.outcomes.1, paid, missed)
}

#[test]
fn random_market_activity_keeps_every_invariant_and_settles() {
    let seeds: u64 = std::env::var("GPUCHAIN_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6);
    let mut totals = (0, 0, 0, 0);
    for seed in 0..seeds {
        let Ok((ok, failed, paid, missed)) = std::panic::catch_unwind(|| run(seed)) else {
            panic!("simulation failed with seed {seed}");
        };
        totals = (
            totals.0 + ok,
            totals.1 + failed,
            totals.2 + paid,
            totals.3 + missed,
        );
    }
    let (ok, failed, paid, missed) = totals;
    eprintln!("{seeds} seeds: {ok} ops ok, {failed} refused, {paid} leases paid, {missed} missed");
    assert!(ok > 50 * seeds && failed > 10 * seeds && paid > seeds as usize && missed > 0);
}
