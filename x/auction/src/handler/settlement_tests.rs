//! An order from posting to payment on the in-memory chain, with the invariants (supply,
//! escrow == open obligations, rewards pool == accrued rewards) after every block: replicas
//! paid after the challenge window, the loyalty bonus, missed deadlines and released leases,
//! cancels and too few bids.

use gpuchain_bank::module_account::fee_pool;
use gpuchain_bank::BankRead;
use gpuchain_reputation::{ReputationRead, NEUTRAL_PPM};
use gpuchain_slashing::SlashingRead;
use gpuchain_staking::StakingRead;

use crate::test_utils::*;
use crate::{
    module_account, AuctionError, AuctionMsg, AuctionParams, AuctionRead, LeaseState,
    MsgCancelOrder, MsgReleaseLease, MsgWithdrawRewards, OrderState, TooFewBids,
};

use super::test_steps::*;

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
        client_after_clearing + 900_000,
        "the replica is refunded at once"
    );
    // A client that made its provider fail (a coordinator it stopped) gains nothing by it.
    assert_eq!(slash[0].outcome.to_client, 0);
    assert_eq!(slash[0].outcome.burned, 20 * GPU);
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
