//! The market end to end on an in-memory chain; invariants (supply, escrow == open
//! obligations, rewards pool == accrued rewards) after every block.

use gpuchain_bank::module_account::fee_pool;
use gpuchain_bank::BankRead;
use gpuchain_reputation::{ReputationRead, NEUTRAL_PPM};
use gpuchain_slashing::{slash_provider, FaultKind, SlashingRead};
use gpuchain_staking::{module_account as staking_accounts, StakingRead};
use gpuchain_types::{MemState, ModuleError, Overlay};

use crate::test_utils::*;
use crate::{
    apply_verdict, commitment, module_account, AuctionError, AuctionMsg, AuctionParams,
    AuctionRead, LeaseState, MsgBid, MsgCancelOrder, MsgCommitResult, MsgReleaseLease,
    MsgRevealResult, MsgWithdrawRewards, OrderState, TooFewBids, Verdict,
};

pub(super) const MAX: u128 = 1_000_000;

pub(super) fn post(chain: &mut Chain, h: u64, client: u8, k: u32) -> u64 {
    chain
        .exec(h, client, AuctionMsg::PostOrder(order_msg(k, MAX)))
        .unwrap();
    chain.state.orders().last().unwrap().id
}

pub(super) fn bid(chain: &mut Chain, h: u64, provider: u8, order_id: u64, price: u128) {
    chain
        .exec(h, provider, AuctionMsg::Bid(MsgBid { order_id, price }))
        .unwrap();
}

pub(super) fn commit_msg(provider: u8, lease_id: u64, result: [u8; 32]) -> AuctionMsg {
    AuctionMsg::CommitResult(MsgCommitResult {
        lease_id,
        commitment: commitment(&result, &addr(provider), &[provider; 32]),
    })
}

pub(super) fn reveal_msg(provider: u8, lease_id: u64, result: [u8; 32]) -> AuctionMsg {
    AuctionMsg::RevealResult(MsgRevealResult {
        lease_id,
        result_hash: result,
        salt: [provider; 32],
    })
}

/// Posts a k-replica order at height 1 and has `bids` bid at height 2; clears at 4.
pub(super) fn cleared(chain: &mut Chain, k: u32, bids: &[(u8, u128)]) -> u64 {
    let id = post(chain, 1, 1, k);
    chain.end_block(1);
    for (p, price) in bids {
        bid(chain, 2, *p, id, *price);
    }
    for h in 2..=4 {
        chain.end_block(h);
    }
    id
}

/// Commits and reveals `results` (provider, result) at height 5.
pub(super) fn reveal_all(chain: &mut Chain, order: u64, results: &[(u8, [u8; 32])]) {
    for (p, r) in results {
        let lease = lease_of(chain, order, *p);
        chain.exec(5, *p, commit_msg(*p, lease, *r)).unwrap();
    }
    for (p, r) in results {
        let lease = lease_of(chain, order, *p);
        chain.exec(5, *p, reveal_msg(*p, lease, *r)).unwrap();
    }
}

/// The client (1) confirms at `h` that it fetched `provider`'s output of `order`.
pub(super) fn confirm(chain: &mut Chain, h: u64, order: u64, provider: u8) {
    let lease_id = lease_of(chain, order, provider);
    chain
        .exec(
            h,
            1,
            AuctionMsg::ConfirmReceipt(crate::MsgConfirmReceipt { lease_id }),
        )
        .unwrap();
}

/// The state of `provider`'s lease of `order`.
pub(super) fn state_of(chain: &Chain, order: u64, provider: u8) -> LeaseState {
    chain
        .state
        .lease(lease_of(chain, order, provider))
        .unwrap()
        .state
}

/// `provider` of a `Comparing` lease of `order_id` states its comparison at `h`.
pub(super) fn compare(
    chain: &mut Chain,
    h: u64,
    order_id: u64,
    provider: u8,
    consistent: bool,
) -> Result<(), AuctionError> {
    let lease_id = lease_of(chain, order_id, provider);
    chain.exec(
        h,
        provider,
        AuctionMsg::CompareReplicas(crate::MsgCompareReplicas {
            lease_id,
            consistent,
        }),
    )
}

pub(super) fn lease_of(chain: &Chain, order_id: u64, provider: u8) -> u64 {
    chain
        .state
        .leases_of_order(order_id)
        .iter()
        .find(|l| l.provider == addr(provider))
        .unwrap()
        .id
}

#[test]
fn two_replicas_are_paid_after_the_challenge_window_to_the_unit() {
    // Reputation alone would never audit; the deterrence floor still does, a little.
    let mut chain = Chain::new(AuctionParams {
        audit_min_ppm: 0,
        audit_max_ppm: 0,
        ..test_params()
    });
    let before: Vec<u128> = [1, 10, 11, 12].iter().map(|&a| chain.balance(a)).collect();
    let id = cleared(
        &mut chain,
        2,
        &[(10, 600_000), (11, 700_000), (12, 800_000)],
    );
    let order = chain.state.order(id).unwrap();
    assert_eq!(order.state, OrderState::Cleared);
    assert_eq!(order.clearing_price, Some(800_000), "the third-best bid");
    let leases = chain.state.leases_of_order(id);
    assert_eq!(leases.len(), 2);
    assert_eq!(chain.state.open_leases(&addr(10)), 1);
    // Locked 2 × 1,000,000 + 2% fee + a 2 × 1,000,000 dispute reserve; 2 × 200,000 of the
    // price and as much of the reserve refunded at clearing; fee to verification.
    assert_eq!(
        chain.balance(1),
        before[0] - 2_040_000 - 2_000_000 + 800_000
    );
    assert_eq!(chain.state.balance(&module_account::escrow()), 3_200_000);

    let result = [42u8; 32];
    for p in [10, 11] {
        chain
            .exec(5, p, commit_msg(p, lease_of(&chain, id, p), result))
            .unwrap();
    }
    for p in [10, 11] {
        chain
            .exec(6, p, reveal_msg(p, lease_of(&chain, id, p), result))
            .unwrap();
    }
    chain.end_block(6);
    // The client fetched both outputs: paid without an availability check.
    confirm(&mut chain, 7, id, 10);
    confirm(&mut chain, 7, id, 11);
    let lease = chain.state.lease(lease_of(&chain, id, 10)).unwrap();
    assert_eq!(lease.state, LeaseState::Accepted);
    assert_eq!(lease.payout_height, Some(10), "accepted at 6, window 4");
    for h in 7..=9 {
        chain.end_block(h);
    }
    assert_eq!(
        chain.balance(10),
        before[1],
        "not paid before the window closes"
    );
    // Each lease's audit chance is the floor for 800,000 against a 300 GPU slash,
    // ⌈800,000 × 1.5 / 300,800,000 × 10^6⌉ = 3,990 ppm; the two are audited together, by one
    // re-run, when either is drawn: 7,965 ppm (rounded up) of one 800,000 fee, 6,372 ugpu,
    // half each (3,186); the take is 10% of the remaining 796,814 (79,681).
    assert_eq!(lease.verification_charge, 3_186);
    chain.end_block(10);
    assert_eq!(chain.balance(10), before[1] + 717_133);
    assert_eq!(chain.balance(11), before[2] + 717_133);
    assert_eq!(chain.balance(12), before[3], "the loser gets nothing");
    assert_eq!(chain.balance(1), before[0] - 1_640_000);
    assert_eq!(chain.state.balance(&module_account::escrow()), 0);
    assert_eq!(chain.state.order(id).unwrap().state, OrderState::Settled);
    assert_eq!(chain.state.open_leases(&addr(10)), 0);
    // The 159,362 take was split: half to the validator, 20% community, the rest
    // verification, which also got the 40,000 fee and the two charges.
    assert_eq!(chain.state.balance(&fee_pool()), 0);
    assert_eq!(chain.state.reward(&addr(VALIDATOR)), 79_681);
    assert_eq!(
        chain.state.balance(&module_account::community_pool()),
        31_872
    );
    assert_eq!(
        chain.state.balance(&module_account::verification_pool()),
        40_000 + 47_809 + 2 * 3_186
    );
    assert!(chain.state.score(&addr(10), 10) > NEUTRAL_PPM);
    let validator_before = chain.balance(VALIDATOR);
    let withdraw = AuctionMsg::WithdrawRewards(MsgWithdrawRewards {});
    chain.exec(11, VALIDATOR, withdraw.clone()).unwrap();
    assert_eq!(chain.balance(VALIDATOR), validator_before + 79_681);
    assert_eq!(
        chain.exec(11, VALIDATOR, withdraw),
        Err(AuctionError::NoRewards(addr(VALIDATOR)))
    );
    chain.check(11);
    let kinds: Vec<&str> = chain
        .events
        .iter()
        .filter(|e| e.get("order_id") == Some(&id.to_string()))
        .map(|e| &*e.kind)
        .collect();
    for kind in [
        "auction.order_posted",
        "auction.bid",
        "escrow.refunded",
        "auction.order_cleared",
        "auction.lease_created",
        "verify.committed",
        "verify.revealed",
        "verify.lease_state",
        "escrow.paid",
        "auction.order_settled",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    let created = chain
        .events
        .iter()
        .find(|e| e.kind == "auction.lease_created")
        .unwrap();
    for key in ["lease_id", "order_id", "provider", "client"] {
        assert!(created.get(key).is_some(), "{key}");
    }
}

#[test]
fn a_clean_record_earns_the_loyalty_bonus_out_of_the_take() {
    let mut chain = Chain::new(AuctionParams {
        clean_service_blocks: 5,
        ..test_params()
    });
    let before = chain.balance(10);
    let id = cleared(&mut chain, 1, &[(10, 600_000), (11, 800_000)]);
    let lease = lease_of(&chain, id, 10);
    chain.exec(5, 10, commit_msg(10, lease, [8; 32])).unwrap();
    chain.exec(5, 10, reveal_msg(10, lease, [8; 32])).unwrap();
    for h in 5..=30 {
        chain.end_block(h);
    }
    // Paid directly or after the audit fallback; either way with the bonus.
    assert_eq!(chain.state.lease(lease).unwrap().state, LeaseState::Paid);
    // 800,000 − the verification charge of a fresh provider (18% audit chance: 144,000),
    // then 10% take of the rest + 5% bonus.
    assert_eq!(chain.balance(10), before + 623_200);
    let paid = chain
        .events
        .iter()
        .find(|e| e.kind == "escrow.paid")
        .unwrap();
    assert_eq!(paid.get("verification"), Some("144000"));
    assert_eq!(paid.get("bonus"), Some("32800"));
    assert_eq!(paid.get("take"), Some("32800"));
}

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
fn a_copied_reveal_and_a_late_commit_fail() {
    let mut chain = Chain::new(test_params());
    let id = cleared(&mut chain, 2, &[(10, 600_000), (11, 700_000)]);
    let (l10, l11) = (lease_of(&chain, id, 10), lease_of(&chain, id, 11));
    let honest = [1u8; 32];
    chain.exec(5, 10, commit_msg(10, l10, honest)).unwrap();
    // Provider 11 committed to some other hash, then copies 10's revealed hash.
    assert_eq!(
        chain.exec(5, 10, reveal_msg(10, l10, honest)),
        Err(AuctionError::RevealTooEarly { deadline: 9 })
    );
    chain.exec(5, 11, commit_msg(11, l11, [9; 32])).unwrap();
    chain.exec(6, 10, reveal_msg(10, l10, honest)).unwrap();
    assert_eq!(
        chain.exec(6, 11, reveal_msg(11, l11, honest)),
        Err(AuctionError::CommitmentMismatch)
    );
    let copied_salt = AuctionMsg::RevealResult(MsgRevealResult {
        lease_id: l11,
        result_hash: honest,
        salt: [10; 32],
    });
    assert_eq!(
        chain.exec(6, 11, copied_salt),
        Err(AuctionError::CommitmentMismatch),
        "the commitment binds the provider, so copying the salt too does not help"
    );

    let id2 = {
        let id = post(&mut chain, 7, 2, 1);
        bid(&mut chain, 8, 12, id, 500_000);
        for h in 7..=10 {
            chain.end_block(h);
        }
        id
    };
    let l12 = lease_of(&chain, id2, 12);
    let deadline = chain.state.lease(l12).unwrap().deadline_height;
    assert_eq!(
        chain.exec(deadline + 1, 12, commit_msg(12, l12, honest)),
        Err(AuctionError::CommitTooLate {
            deadline,
            height: deadline + 1
        })
    );
}

#[test]
fn a_missed_deadline_slashes_and_refunds_the_replica() {
    let mut chain = Chain::new(test_params());
    let id = cleared(
        &mut chain,
        2,
        &[(10, 600_000), (11, 700_000), (12, 900_000)],
    );
    let client_after_clearing = chain.balance(1);
    let bond_before = chain.state.provider(&addr(11)).unwrap().bonded;
    let l10 = lease_of(&chain, id, 10);
    chain.exec(5, 10, commit_msg(10, l10, [3; 32])).unwrap();
    // 11 never commits; 10 may reveal once the deadline (9) passed.
    for h in 5..=9 {
        chain.end_block(h);
    }
    chain.exec(10, 10, reveal_msg(10, l10, [3; 32])).unwrap();
    for h in 10..=12 {
        chain.end_block(h);
    }
    let l11 = chain.state.lease(lease_of(&chain, id, 11)).unwrap();
    assert_eq!(l11.state, LeaseState::Missed);
    let slash = chain.state.slash_records_of(&addr(11));
    assert_eq!(slash.len(), 1);
    let bond_after = chain.state.provider(&addr(11)).unwrap().bonded;
    assert_eq!(bond_before - bond_after, slash[0].outcome.slashed);
    assert_eq!(slash[0].outcome.slashed, 50 * GPU, "5% of a 1,000 GPU bond");
    assert_eq!(
        chain.balance(1),
        client_after_clearing + 900_000 + slash[0].outcome.to_client,
        "the replica's price back, plus the client's share of the slash"
    );
    assert!(chain.state.score(&addr(11), 12) < NEUTRAL_PPM);
    assert!(!chain.state.is_eligible_provider(&addr(11), 13), "jailed");
    assert_eq!(chain.state.open_leases(&addr(11)), 0);
    // The lone revealed replica was either accepted or sampled for audit.
    let l10 = chain.state.lease(l10).unwrap();
    assert!(matches!(
        l10.state,
        LeaseState::Accepted | LeaseState::AuditPending
    ));
    for h in 13..=30 {
        chain.end_block(h);
    }
    assert_eq!(chain.state.order(id).unwrap().state, OrderState::Settled);
    assert_eq!(chain.state.balance(&module_account::escrow()), 0);
}

#[test]
fn a_released_lease_refunds_at_once_and_slashes_less_than_a_miss() {
    let mut chain = Chain::new(test_params());
    let id = cleared(
        &mut chain,
        2,
        &[(10, 600_000), (11, 700_000), (12, 900_000)],
    );
    let client_after_clearing = chain.balance(1);
    let (l10, l11) = (lease_of(&chain, id, 10), lease_of(&chain, id, 11));
    let release = |lease_id| AuctionMsg::ReleaseLease(MsgReleaseLease { lease_id });

    // Only the lease's provider may hand it back, and only while it is open or committed.
    let before = chain.state.clone();
    assert_eq!(
        chain.exec(5, 10, release(l11)).unwrap_err(),
        AuctionError::NotLeaseProvider(addr(10))
    );
    assert_eq!(chain.state, before, "a refused release changes nothing");

    chain.exec(5, 11, release(l11)).unwrap();
    let lease = chain.state.lease(l11).unwrap();
    assert_eq!(lease.state, LeaseState::Released);
    let slash = chain.state.slash_records_of(&addr(11));
    assert_eq!(slash.len(), 1);
    assert_eq!(
        slash[0].outcome.slashed,
        20 * GPU,
        "2% of a 1,000 GPU bond, not 5%"
    );
    assert_eq!(
        chain.balance(1),
        client_after_clearing + 900_000 + slash[0].outcome.to_client,
        "the replica is refunded at once"
    );
    assert_eq!(chain.state.open_leases(&addr(11)), 0);
    assert!(matches!(
        chain.exec(6, 11, release(l11)).unwrap_err(),
        AuctionError::WrongLeaseState { .. }
    ));

    // The remaining replica no longer waits for the released one to reveal.
    chain.exec(6, 10, commit_msg(10, l10, [3; 32])).unwrap();
    chain.exec(7, 10, reveal_msg(10, l10, [3; 32])).unwrap();
    for h in 7..=30 {
        chain.end_block(h);
    }
    assert_eq!(chain.state.order(id).unwrap().state, OrderState::Settled);
    assert_eq!(chain.state.balance(&module_account::escrow()), 0);

    // After the commit deadline a lease is missed, not released.
    let id = post(&mut chain, 31, 1, 1);
    chain.end_block(31);
    bid(&mut chain, 32, 12, id, 500_000);
    for h in 32..=34 {
        chain.end_block(h);
    }
    let l12 = lease_of(&chain, id, 12);
    let deadline = chain.state.lease(l12).unwrap().deadline_height;
    assert_eq!(
        chain.exec(deadline + 1, 12, release(l12)).unwrap_err(),
        AuctionError::ReleaseTooLate {
            deadline,
            height: deadline + 1
        }
    );
}

#[test]
fn cancel_before_clearing_refunds_everything() {
    let mut chain = Chain::new(test_params());
    let before = chain.balance(1);
    let id = post(&mut chain, 1, 1, 3);
    bid(&mut chain, 2, 10, id, 1);
    // 3 × 1 GPU, the 2% fee and a dispute reserve of one audit fee per replica.
    assert_eq!(chain.balance(1), before - 3_060_000 - 3_000_000);
    let cancel = AuctionMsg::CancelOrder(MsgCancelOrder { order_id: id });
    assert_eq!(
        chain.exec(2, 2, cancel.clone()),
        Err(AuctionError::NotOrderClient(addr(2)))
    );
    chain.exec(2, 1, cancel.clone()).unwrap();
    assert_eq!(chain.balance(1), before);
    for h in 2..=5 {
        chain.end_block(h);
    }
    assert_eq!(chain.state.order(id).unwrap().state, OrderState::Cancelled);
    assert!(
        chain.state.leases().is_empty(),
        "a cancelled order never clears"
    );
    assert_eq!(
        chain.exec(6, 1, cancel),
        Err(AuctionError::OrderNotOpen {
            id,
            state: OrderState::Cancelled
        })
    );
}

#[test]
fn too_few_bids_refund_or_reopen_once() {
    let mut chain = Chain::new(test_params());
    let before = chain.balance(1);
    let id = cleared(&mut chain, 2, &[(10, 500_000)]);
    assert_eq!(chain.state.order(id).unwrap().state, OrderState::Expired);
    assert_eq!(chain.balance(1), before);

    let mut msg = order_msg(2, MAX);
    msg.on_too_few_bids = TooFewBids::ReopenOnce;
    chain.exec(5, 1, AuctionMsg::PostOrder(msg)).unwrap();
    let id = chain.state.orders().last().unwrap().id;
    bid(&mut chain, 6, 10, id, 500_000);
    for h in 5..=8 {
        chain.end_block(h);
    }
    let order = chain.state.order(id).unwrap();
    assert_eq!(
        (order.state, order.reopened, order.bid_end_height),
        (OrderState::Open, true, 11)
    );
    bid(&mut chain, 9, 11, id, 400_000);
    for h in 9..=11 {
        chain.end_block(h);
    }
    let order = chain.state.order(id).unwrap();
    assert_eq!(
        order.state,
        OrderState::Cleared,
        "the kept bid plus a new one"
    );
    assert_eq!(
        order.clearing_price,
        Some(500_000),
        "only k bid: the highest winning ask, not the max price"
    );
}

#[test]
fn each_bad_message_has_its_own_error_and_changes_nothing() {
    let mut chain = Chain::new(test_params());
    let id = post(&mut chain, 1, 1, 1);
    // Jail provider 13 and take provider 12 below the minimum bond.
    let mut fork = Overlay::new(&chain.state);
    slash_provider(
        &mut fork,
        &ctx(1),
        &addr(13),
        FaultKind::MissedDeadline,
        &addr(1),
        None,
        None,
    )
    .unwrap();
    let (writes, _) = fork.into_parts();
    chain.state.apply(writes);
    let mut bad_order = order_msg(6, MAX);
    let mut cases: Vec<(u8, AuctionMsg, AuctionError)> = vec![(
        2,
        AuctionMsg::PostOrder(bad_order.clone()),
        AuctionError::Replicas(6),
    )];
    bad_order.replicas = 1;
    bad_order.max_price_per_replica = 0;
    cases.push((
        2,
        AuctionMsg::PostOrder(bad_order.clone()),
        AuctionError::ZeroPrice,
    ));
    bad_order.max_price_per_replica = u128::MAX;
    let limit = AuctionParams::default().max_price_per_replica_limit;
    cases.push((
        2,
        AuctionMsg::PostOrder(bad_order.clone()),
        AuctionError::PriceAboveLimit {
            price: u128::MAX,
            limit,
        },
    ));
    bad_order.max_price_per_replica = MAX;
    bad_order.bid_window_blocks = 0;
    cases.push((
        2,
        AuctionMsg::PostOrder(bad_order.clone()),
        AuctionError::BidWindow { got: 0, max: 1_000 },
    ));
    bad_order.bid_window_blocks = 3;
    bad_order.exec_deadline_blocks = 1_000_000;
    cases.push((
        2,
        AuctionMsg::PostOrder(bad_order.clone()),
        AuctionError::ExecDeadline {
            got: 1_000_000,
            max: 100_000,
        },
    ));
    bad_order.exec_deadline_blocks = 5;
    bad_order.requirements.region = Some("eu\nwest".into());
    cases.push((
        2,
        AuctionMsg::PostOrder(bad_order.clone()),
        AuctionError::RequirementText {
            field: "region",
            max: 64,
        },
    ));
    bad_order.requirements.region = None;
    let mut broken_job = order_msg(1, MAX);
    if let gpuchain_jobspec::JobSpec::Inference(s) = &mut broken_job.job {
        s.batch_size = 0;
    }
    let job_error = broken_job.job.validate().unwrap_err().to_string();
    cases.push((
        2,
        AuctionMsg::PostOrder(broken_job),
        AuctionError::InvalidJob(job_error),
    ));
    bad_order.max_price_per_replica = 990 * GPU;
    cases.push((
        2,
        AuctionMsg::PostOrder(bad_order),
        AuctionError::InsufficientFunds {
            address: addr(2),
            available: 1_000 * GPU,
            required: 1_009_800_000,
        },
    ));
    let b = |order_id, price| AuctionMsg::Bid(MsgBid { order_id, price });
    cases.extend([
        (10, b(99, 1), AuctionError::UnknownOrder(99)),
        (10, b(id, 0), AuctionError::ZeroPrice),
        (1, b(id, 1), AuctionError::SelfBid),
        (2, b(id, 1), AuctionError::NotEligible(addr(2))),
        (13, b(id, 1), AuctionError::NotEligible(addr(13))),
        (14, b(id, 1), AuctionError::RequirementsNotMet(addr(14))),
        (
            10,
            b(id, MAX + 1),
            AuctionError::PriceAboveMax {
                price: MAX + 1,
                max: MAX,
            },
        ),
    ]);
    for (signer, msg, expected) in cases {
        assert_eq!(chain.exec(2, signer, msg.clone()), Err(expected), "{msg:?}");
    }
    bid(&mut chain, 2, 10, id, 5);
    assert_eq!(
        chain.exec(2, 10, b(id, 4)),
        Err(AuctionError::DuplicateBid(addr(10)))
    );
    assert_eq!(
        chain.exec(5, 11, b(id, 4)),
        Err(AuctionError::BidWindowClosed { id, end: 4 })
    );
    for h in 2..=4 {
        chain.end_block(h);
    }
    let lease = chain.state.leases_of_order(id)[0].id;
    let lease_cases: Vec<(u8, AuctionMsg, AuctionError)> = vec![
        (
            11,
            commit_msg(11, lease, [1; 32]),
            AuctionError::NotLeaseProvider(addr(11)),
        ),
        (
            10,
            commit_msg(10, 77, [1; 32]),
            AuctionError::UnknownLease(77),
        ),
        (
            10,
            reveal_msg(10, lease, [1; 32]),
            AuctionError::WrongLeaseState {
                id: lease,
                state: LeaseState::Open,
            },
        ),
        (
            1,
            AuctionMsg::CancelOrder(MsgCancelOrder { order_id: id }),
            AuctionError::OrderNotOpen {
                id,
                state: OrderState::Cleared,
            },
        ),
        (
            3,
            AuctionMsg::WithdrawRewards(MsgWithdrawRewards {}),
            AuctionError::NoRewards(addr(3)),
        ),
    ];
    for (signer, msg, expected) in lease_cases {
        assert_eq!(chain.exec(5, signer, msg.clone()), Err(expected), "{msg:?}");
    }
    chain.exec(5, 10, commit_msg(10, lease, [1; 32])).unwrap();
    assert_eq!(
        chain.exec(15, 10, reveal_msg(10, lease, [1; 32])),
        Err(AuctionError::RevealTooLate { end: 12 })
    );
}

#[test]
fn error_codes_are_unique() {
    use crate::{LeaseState as L, OrderState as O};
    let a = addr(1);
    let all = [
        AuctionError::InvalidJob(String::new()),
        AuctionError::Replicas(0),
        AuctionError::ZeroPrice,
        AuctionError::PriceAboveLimit { price: 0, limit: 0 },
        AuctionError::BidWindow { got: 0, max: 0 },
        AuctionError::ExecDeadline { got: 0, max: 0 },
        AuctionError::RequirementText { field: "x", max: 0 },
        AuctionError::InsufficientFunds {
            address: a,
            available: 0,
            required: 0,
        },
        AuctionError::Overflow,
        AuctionError::UnknownOrder(0),
        AuctionError::NotOrderClient(a),
        AuctionError::OrderNotOpen {
            id: 0,
            state: O::Open,
        },
        AuctionError::BidWindowClosed { id: 0, end: 0 },
        AuctionError::NotEligible(a),
        AuctionError::RequirementsNotMet(a),
        AuctionError::PriceAboveMax { price: 0, max: 0 },
        AuctionError::DuplicateBid(a),
        AuctionError::TooManyBids(0),
        AuctionError::SelfBid,
        AuctionError::UnknownLease(0),
        AuctionError::NotLeaseProvider(a),
        AuctionError::WrongLeaseState {
            id: 0,
            state: L::Open,
        },
        AuctionError::CommitTooLate {
            deadline: 0,
            height: 0,
        },
        AuctionError::RevealTooEarly { deadline: 0 },
        AuctionError::RevealTooLate { end: 0 },
        AuctionError::CommitmentMismatch,
        AuctionError::NoRewards(a),
        AuctionError::VerdictNotPending(0),
        AuctionError::InvalidParams(String::new()),
        AuctionError::ReleaseTooLate {
            deadline: 0,
            height: 0,
        },
    ];
    let mut codes: Vec<u32> = all.iter().map(|e| e.code()).collect();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), all.len());
    assert!(all
        .iter()
        .all(|e| e.codespace() == "auction" && e.code() != 0));
}

#[test]
fn lone_results_are_audited_and_verdicts_settle_them() {
    let always = AuctionParams {
        audit_min_ppm: 1_000_000,
        audit_max_ppm: 1_000_000,
        ..test_params()
    };
    let mut chain = Chain::new(always);
    let id = cleared(&mut chain, 1, &[(10, 600_000)]);
    let lease = lease_of(&chain, id, 10);
    chain.exec(5, 10, commit_msg(10, lease, [5; 32])).unwrap();
    chain.exec(5, 10, reveal_msg(10, lease, [5; 32])).unwrap();
    chain.end_block(5);
    assert_eq!(
        chain.state.lease(lease).unwrap().state,
        LeaseState::AuditPending
    );
    let client_before = chain.balance(1);
    let mut fork = Overlay::new(&chain.state);
    let prover = addr(3);
    apply_verdict(
        &mut fork,
        &ctx(6),
        lease,
        Verdict::Faulty {
            prover: Some(prover),
            costs: 0,
        },
    )
    .unwrap();
    let (writes, _) = fork.into_parts();
    chain.state.apply(writes);
    chain.end_block(6);
    let l = chain.state.lease(lease).unwrap();
    assert_eq!(l.state, LeaseState::Faulted);
    let slash = &chain.state.slash_records_of(&addr(10))[0];
    assert_eq!(slash.outcome.slashed, 300 * GPU, "30% for a wrong result");
    assert_eq!(
        chain.balance(1),
        client_before + 600_000 + slash.outcome.to_client,
        "the price (the lone bidder's ask) back, plus the client's share of the slash"
    );
    assert_eq!(chain.state.order(id).unwrap().state, OrderState::Settled);
    let mut fork = Overlay::new(&chain.state);
    assert_eq!(
        apply_verdict(&mut fork, &ctx(7), lease, Verdict::Honest),
        Err(AuctionError::VerdictNotPending(lease))
    );

    let never = AuctionParams {
        audit_min_ppm: 0,
        audit_max_ppm: 0,
        ..test_params()
    };
    let mut chain = Chain::new(never);
    let id = cleared(&mut chain, 1, &[(10, 600_000)]);
    let lease = lease_of(&chain, id, 10);
    chain.exec(5, 10, commit_msg(10, lease, [5; 32])).unwrap();
    chain.exec(5, 10, reveal_msg(10, lease, [5; 32])).unwrap();
    assert_eq!(
        chain.state.lease(lease).unwrap().state,
        LeaseState::Accepted
    );
}

#[test]
fn disagreeing_replicas_with_no_verdict_are_accepted_not_refunded() {
    let mut chain = Chain::new(test_params());
    let id = cleared(&mut chain, 2, &[(10, 600_000), (11, 700_000)]);
    let client_after_clearing = chain.balance(1);
    for (p, r) in [(10, [1u8; 32]), (11, [2u8; 32])] {
        let lease = lease_of(&chain, id, p);
        chain.exec(5, p, commit_msg(p, lease, r)).unwrap();
    }
    for (p, r) in [(10, [1u8; 32]), (11, [2u8; 32])] {
        let lease = lease_of(&chain, id, p);
        chain.exec(5, p, reveal_msg(p, lease, r)).unwrap();
    }
    compare(&mut chain, 5, id, 10, false).unwrap();
    let states: Vec<LeaseState> = chain
        .state
        .leases_of_order(id)
        .iter()
        .map(|l| l.state)
        .collect();
    assert_eq!(states, vec![LeaseState::Disputed, LeaseState::Disputed]);
    for h in 5..=11 {
        chain.end_block(h);
    }
    // No verifier judged either result in the verdict window: both are accepted, as an
    // unjudged audit is. A refund would give a client that disputes while no verifier is
    // around the work for free.
    let states: Vec<LeaseState> = chain
        .state
        .leases_of_order(id)
        .iter()
        .map(|l| l.state)
        .collect();
    assert_eq!(states, vec![LeaseState::Accepted, LeaseState::Accepted]);
    assert_eq!(
        chain.balance(1),
        client_after_clearing + 2 * 700_000,
        "the dispute reserve nobody used comes back; the replicas do not"
    );
    for p in [10, 11] {
        confirm(&mut chain, 12, id, p);
    }
    let before = (chain.balance(10), chain.balance(11));
    for h in 12..=15 {
        chain.end_block(h);
    }
    assert_eq!(
        (chain.balance(10), chain.balance(11)),
        (before.0 + 630_000, before.1 + 630_000),
        "both paid the clearing price less the take, no verification charge"
    );
    assert!(chain
        .events
        .iter()
        .any(|e| e.kind == "escrow.refunded" && e.get("reason") == Some("unverified_dispute")));
    assert!(
        chain.state.slash_records().is_empty(),
        "no fault was proven"
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

#[test]
fn order_and_reveal_bodies_round_trip_through_json_for_the_cli() {
    // The bodies, not the internally tagged `AuctionMsg`: serde cannot buffer a u128 inside
    // an internally tagged enum, so the CLI reads a body and wraps it.
    let order = order_msg(2, MAX);
    let text = serde_json::to_string(&order).unwrap();
    assert_eq!(
        serde_json::from_str::<crate::MsgPostOrder>(&text).unwrap(),
        order
    );
    let AuctionMsg::RevealResult(reveal) = reveal_msg(10, 3, [1; 32]) else {
        unreachable!()
    };
    let text = serde_json::to_string(&reveal).unwrap();
    assert!(text.contains(&hex::encode([1u8; 32])), "{text}");
    assert_eq!(
        serde_json::from_str::<MsgRevealResult>(&text).unwrap(),
        reveal
    );
    let tagged = serde_json::to_string(&AuctionMsg::RevealResult(reveal)).unwrap();
    assert!(tagged.contains("\"type\":\"reveal_result\""), "{tagged}");
}

/// Many orders with many bids clearing in one block. `GPUCHAIN_CLEARING_SCALE=100,1000`
/// runs the benchmark shape (100 orders of 1,000 bids); the default is small.
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

#[test]
fn the_verdict_pending_index_follows_the_lease_and_a_hold_delays_its_timers() {
    let always = AuctionParams {
        audit_min_ppm: 1_000_000,
        audit_max_ppm: 1_000_000,
        ..test_params()
    };
    let mut chain = Chain::new(always);
    let id = cleared(&mut chain, 1, &[(10, 600_000)]);
    let lease = lease_of(&chain, id, 10);
    chain.exec(5, 10, commit_msg(10, lease, [5; 32])).unwrap();
    chain.exec(5, 10, reveal_msg(10, lease, [5; 32])).unwrap();
    chain.end_block(5);
    let pending: Vec<u64> = chain
        .state
        .verdict_pending_leases()
        .iter()
        .map(|l| l.id)
        .collect();
    assert_eq!(pending, vec![lease]);
    // The verdict window (6) would accept it at 11; a hold to 14 delays the fallback.
    let mut fork = Overlay::new(&chain.state);
    crate::hold_lease(&mut fork, lease, 14).unwrap();
    crate::hold_lease(&mut fork, lease, 9).unwrap();
    let (writes, _) = fork.into_parts();
    chain.state.apply(writes);
    assert_eq!(
        chain.state.lease(lease).unwrap().verdict_deadline_height,
        Some(14),
        "a hold never shortens a timer"
    );
    for h in 6..=13 {
        chain.end_block(h);
    }
    assert_eq!(
        chain.state.lease(lease).unwrap().state,
        LeaseState::AuditPending
    );
    chain.end_block(14);
    let l = chain.state.lease(lease).unwrap();
    assert_eq!(l.state, LeaseState::Accepted, "the fallback, at the hold");
    assert!(chain.state.verdict_pending_leases().is_empty());
    // An accepted lease's payout (14 + 4) is held too; a paid one cannot be held. (Nobody
    // judged it, so the client's receipt is what lets it be paid without a check.)
    confirm(&mut chain, 15, id, 10);
    let mut fork = Overlay::new(&chain.state);
    crate::hold_lease(&mut fork, lease, 25).unwrap();
    let (writes, _) = fork.into_parts();
    chain.state.apply(writes);
    for h in 15..=24 {
        chain.end_block(h);
    }
    assert_eq!(
        chain.state.lease(lease).unwrap().state,
        LeaseState::Accepted
    );
    chain.end_block(25);
    assert_eq!(chain.state.lease(lease).unwrap().state, LeaseState::Paid);
    let mut fork = Overlay::new(&chain.state);
    assert_eq!(
        crate::hold_lease(&mut fork, lease, 30),
        Err(AuctionError::VerdictNotPending(lease))
    );
    assert!(fork.writes().is_empty());
}
