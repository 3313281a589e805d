//! Who pays for verification: every judged lease is charged its audit chance times the
//! audit fee, agreeing replicas are sampled like lone ones, and a faulted replica's slash
//! pays for the verification of the replicas it disagreed with.

use gpuchain_types::Overlay;

use super::test_steps::{
    cleared, commit_msg, compare, confirm, lease_of, reveal_all as reveal, reveal_msg, state_of,
};
use crate::test_utils::*;
use crate::{
    apply_verdict, module_account, AuctionError, AuctionMsg, AuctionParams, AuctionRead,
    LeaseState, OrderState, Verdict,
};
use gpuchain_bank::BankRead;
use gpuchain_slashing::SlashingRead;

fn always() -> AuctionParams {
    AuctionParams {
        audit_min_ppm: 1_000_000,
        audit_max_ppm: 1_000_000,
        ..test_params()
    }
}

fn verdict(chain: &mut Chain, h: u64, lease: u64, verdict: Verdict) {
    let mut fork = Overlay::new(&chain.state);
    apply_verdict(&mut fork, &ctx(h), lease, verdict, &[]).unwrap();
    let (writes, _) = fork.into_parts();
    chain.state.apply(writes);
}

#[test]
fn agreeing_replicas_are_audited_by_one_rerun_and_stand_or_fall_together() {
    // Two colluding providers reveal the same made-up hash: agreement no longer buys a pass.
    let mut chain = Chain::new(always());
    let id = cleared(&mut chain, 2, &[(10, 600_000), (11, 700_000)]);
    reveal(&mut chain, id, &[(10, [9; 32]), (11, [9; 32])]);
    assert_eq!(state_of(&chain, id, 10), LeaseState::AuditPending);
    assert_eq!(
        state_of(&chain, id, 11),
        LeaseState::AuditFollowing,
        "one re-run settles both"
    );
    for p in [10, 11] {
        let lease = chain.state.lease(lease_of(&chain, id, p)).unwrap();
        assert_eq!(
            lease.verification_charge, 350_000,
            "audited for sure: half of the one fee each"
        );
    }
    let sampled = |chain: &Chain| {
        chain
            .events
            .iter()
            .filter(|e| e.kind == "verify.audit_sampled")
            .count()
    };
    assert_eq!(sampled(&chain), 1);
    assert_eq!(
        chain.state.verdict_pending_leases().len(),
        1,
        "only the audited replica waits for a case"
    );
    let audited = lease_of(&chain, id, 10);
    verdict(
        &mut chain,
        6,
        audited,
        Verdict::Faulty {
            prover: Some(addr(3)),
            costs: 700_000,
        },
    );
    chain.end_block(6);
    for p in [10, 11] {
        assert_eq!(state_of(&chain, id, p), LeaseState::Faulted);
    }
    let slash = &chain.state.slash_records_of(&addr(11))[0];
    assert_eq!(slash.prover, Some(addr(3)), "the follower is slashed too");
    assert_eq!(slash.outcome.to_costs, 0, "the fee was paid once");
    chain.check(6);

    // An honest verdict accepts both; each pays its half of the one fee.
    let mut chain = Chain::new(always());
    let id = cleared(&mut chain, 2, &[(10, 600_000), (11, 700_000)]);
    reveal(&mut chain, id, &[(10, [9; 32]), (11, [9; 32])]);
    chain.end_block(5);
    let before = (chain.balance(10), chain.balance(11));
    let audited = lease_of(&chain, id, 10);
    verdict(&mut chain, 6, audited, Verdict::Honest);
    for h in 6..=10 {
        chain.end_block(h);
    }
    for p in [10, 11] {
        assert_eq!(state_of(&chain, id, p), LeaseState::Paid);
    }
    // 700,000 − 350,000 charge, less 10% take.
    assert_eq!(
        (chain.balance(10), chain.balance(11)),
        (before.0 + 315_000, before.1 + 315_000)
    );
    chain.check(10);
}

#[test]
fn a_dispute_is_paid_from_the_clients_reserve_and_a_cheat_pays_it_back() {
    let mut chain = Chain::new(test_params());
    let client_before = chain.balance(1);
    let id = cleared(&mut chain, 2, &[(10, 600_000), (11, 700_000)]);
    // Locked at posting: 2 × 1,000,000 + 2% fee + a reserve of one audit fee per replica;
    // at clearing the reserve is resized to 2 × 700,000 and the rest comes back.
    assert_eq!(chain.state.order(id).unwrap().dispute_reserve, 1_400_000);
    assert_eq!(
        chain.balance(1),
        client_before - 2 * 700_000 - 40_000 - 1_400_000
    );
    let pool = chain.state.balance(&module_account::verification_pool());
    reveal(&mut chain, id, &[(10, [1; 32]), (11, [2; 32])]);
    compare(&mut chain, 5, id, 10, false).unwrap();
    let (honest, cheat) = (lease_of(&chain, id, 10), lease_of(&chain, id, 11));
    for lease in [honest, cheat] {
        let l = chain.state.lease(lease).unwrap();
        assert_eq!(l.state, LeaseState::Disputed);
        assert_eq!(l.verification_charge, 0, "the reserve covers it");
    }
    assert_eq!(
        chain.state.balance(&module_account::verification_pool()),
        pool + 1_400_000,
        "the reserve went to the pool, which pays the two verifiers"
    );
    assert_eq!(chain.state.order(id).unwrap().dispute_reserve, 0);
    chain.end_block(5);
    verdict(&mut chain, 6, honest, Verdict::Honest);
    verdict(
        &mut chain,
        6,
        cheat,
        Verdict::Faulty {
            prover: Some(addr(3)),
            costs: 700_000,
        },
    );
    let provider_before = chain.balance(10);
    for h in 6..=10 {
        chain.end_block(h);
    }
    let slash = &chain.state.slash_records_of(&addr(11))[0];
    assert_eq!(
        slash.outcome.to_costs, 1_400_000,
        "its own verification and the honest replica's, back to the client"
    );
    assert_eq!(state_of(&chain, id, 10), LeaseState::Paid);
    assert_eq!(
        chain.balance(10),
        provider_before + 630_000,
        "the honest replica is paid in full, less the take"
    );
    // The client paid the honest replica and the fee; its reserve and the cheat's price came
    // back, and its share of the rest of the slash.
    assert_eq!(
        chain.balance(1),
        client_before - 700_000 - 40_000 + slash.outcome.to_client
    );
    chain.check(10);
}

#[test]
fn a_dispute_with_no_fault_is_paid_for_by_the_clients_reserve() {
    // One owner's client and two providers reveal different hashes and its verifier calls
    // both honest: the owner's own reserve pays its verifier, the pool gains nothing for it.
    // An honest client whose honest replicas disagreed bit-wise pays the same: it asked for
    // the redundancy; the providers keep their whole payment.
    let mut chain = Chain::new(test_params());
    let client_before = chain.balance(1);
    let id = cleared(&mut chain, 2, &[(10, 600_000), (11, 700_000)]);
    reveal(&mut chain, id, &[(10, [1; 32]), (11, [2; 32])]);
    compare(&mut chain, 5, id, 11, false).unwrap();
    chain.end_block(5);
    let before = (chain.balance(10), chain.balance(11));
    for p in [10, 11] {
        let lease = lease_of(&chain, id, p);
        verdict(&mut chain, 6, lease, Verdict::Honest);
    }
    for h in 6..=10 {
        chain.end_block(h);
    }
    assert_eq!(state_of(&chain, id, 10), LeaseState::Paid);
    assert_eq!(
        (chain.balance(10), chain.balance(11)),
        (before.0 + 630_000, before.1 + 630_000)
    );
    assert_eq!(
        chain.balance(1),
        client_before - 2 * 700_000 - 40_000 - 1_400_000
    );
    chain.check(10);
}

#[test]
fn an_undisputed_order_gets_its_reserve_back() {
    let mut chain = Chain::new(AuctionParams {
        audit_min_ppm: 0,
        audit_max_ppm: 0,
        audit_deterrence_ppm: 0,
        ..test_params()
    });
    let client_before = chain.balance(1);
    let id = cleared(&mut chain, 2, &[(10, 600_000), (11, 700_000)]);
    reveal(&mut chain, id, &[(10, [3; 32]), (11, [3; 32])]);
    confirm(&mut chain, 5, id, 10);
    confirm(&mut chain, 5, id, 11);
    for h in 5..=10 {
        chain.end_block(h);
    }
    let order = chain.state.order(id).unwrap();
    assert_eq!((order.dispute_reserve, order.escrowed), (0, 0));
    assert_eq!(chain.balance(1), client_before - 2 * 700_000 - 40_000);
    assert!(chain
        .events
        .iter()
        .any(|e| e.kind == "escrow.refunded" && e.get("reason") == Some("unused_dispute_reserve")));
    chain.check(10);
}

#[test]
fn the_deterrence_floor_audits_valuable_results_whatever_the_reputation() {
    // Reputation alone would never audit; a 500 GPU job backed by a 300 GPU slash is
    // audited with ⌈500 × 1.5 / 800⌉ = 93.75%, and charged that share of the fee.
    let never = AuctionParams {
        audit_min_ppm: 0,
        audit_max_ppm: 0,
        ..test_params()
    };
    let mut chain = Chain::new(never);
    chain
        .exec(1, 1, AuctionMsg::PostOrder(order_msg(1, 500 * GPU)))
        .unwrap();
    let id = chain.state.orders().last().unwrap().id;
    chain.end_block(1);
    super::test_steps::bid(&mut chain, 2, 10, id, 500 * GPU);
    for h in 2..=4 {
        chain.end_block(h);
    }
    reveal(&mut chain, id, &[(10, [4; 32])]);
    let lease = chain.state.lease(lease_of(&chain, id, 10)).unwrap();
    assert_eq!(lease.verification_charge, 468_750_000);
    let sampled: Vec<_> = chain
        .events
        .iter()
        .filter(|e| e.kind == "verify.audit_sampled")
        .collect();
    match lease.state {
        LeaseState::AuditPending => {
            assert_eq!(sampled[0].get("probability_ppm"), Some("937500"))
        }
        LeaseState::Accepted => assert!(sampled.is_empty()),
        other => panic!("unexpected state {other:?}"),
    }
    // A small job of the same provider keeps reputation's rate (here none).
    let mut chain = Chain::new(AuctionParams {
        audit_deterrence_ppm: 0,
        audit_min_ppm: 0,
        audit_max_ppm: 0,
        ..test_params()
    });
    let id = cleared(&mut chain, 1, &[(10, 600_000)]);
    reveal(&mut chain, id, &[(10, [4; 32])]);
    let lease = chain.state.lease(lease_of(&chain, id, 10)).unwrap();
    assert_eq!(
        (lease.state, lease.verification_charge),
        (LeaseState::Accepted, 0)
    );
    assert!(chain.state.slashing_params().wrong_result_slash_ppm > 0);
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
        &[],
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
        apply_verdict(&mut fork, &ctx(7), lease, Verdict::Honest, &[]),
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
