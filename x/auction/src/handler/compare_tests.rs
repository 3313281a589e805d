//! Replicas that revealed different bytes: their providers compare the outputs under the
//! job's tolerance before anyone pays for a re-execution.

use gpuchain_types::Overlay;

use super::test_steps::{cleared, compare, lease_of, reveal_all as reveal, state_of};
use crate::test_utils::*;
use crate::{
    apply_verdict, module_account, AuctionError, AuctionMsg, AuctionParams, AuctionRead,
    LeaseState, MsgCompareReplicas, Verdict,
};
use gpuchain_bank::BankRead;

fn never_audit() -> AuctionParams {
    AuctionParams {
        audit_min_ppm: 0,
        audit_max_ppm: 0,
        audit_deterrence_ppm: 0,
        ..test_params()
    }
}

fn always_audit() -> AuctionParams {
    AuctionParams {
        audit_min_ppm: 1_000_000,
        audit_max_ppm: 1_000_000,
        ..test_params()
    }
}

#[test]
fn honest_replicas_that_differ_within_tolerance_are_paid_without_a_dispute() {
    let mut chain = Chain::new(never_audit());
    let client_before = chain.balance(1);
    let id = cleared(&mut chain, 2, &[(10, 600_000), (11, 700_000)]);
    let pool = chain.state.balance(&module_account::verification_pool());
    reveal(&mut chain, id, &[(10, [1; 32]), (11, [2; 32])]);
    for p in [10, 11] {
        assert_eq!(state_of(&chain, id, p), LeaseState::Comparing);
    }
    assert_eq!(
        chain.state.order(id).unwrap().dispute_reserve,
        1_400_000,
        "nothing is spent on a re-execution yet"
    );
    compare(&mut chain, 6, id, 10, true).unwrap();
    assert_eq!(
        state_of(&chain, id, 11),
        LeaseState::Comparing,
        "one statement is not all of them"
    );
    compare(&mut chain, 6, id, 11, true).unwrap();
    for p in [10, 11] {
        assert_eq!(state_of(&chain, id, p), LeaseState::Accepted);
    }
    let before = (chain.balance(10), chain.balance(11));
    for h in 6..=12 {
        chain.end_block(h);
    }
    assert_eq!(
        (chain.balance(10), chain.balance(11)),
        (before.0 + 630_000, before.1 + 630_000),
        "both paid in full, less the take"
    );
    assert_eq!(
        chain.balance(1),
        client_before - 2 * 700_000 - 40_000,
        "the client's dispute reserve came back whole"
    );
    assert!(chain.events.iter().any(|e| e.kind == "escrow.refunded"
        && e.get("reason") == Some("unused_dispute_reserve")
        && e.get("amount") == Some("1400000")));
    assert!(
        chain.state.balance(&module_account::verification_pool()) >= pool,
        "the pool paid nobody"
    );
    assert!(chain
        .events
        .iter()
        .any(|e| e.kind == "verify.replicas_compared" && e.get("consistent") == Some("true")));
    chain.check(12);
}

#[test]
fn one_provider_saying_no_disputes_the_order_at_once() {
    let mut chain = Chain::new(never_audit());
    let id = cleared(&mut chain, 2, &[(10, 600_000), (11, 700_000)]);
    reveal(&mut chain, id, &[(10, [1; 32]), (11, [2; 32])]);
    let pool = chain.state.balance(&module_account::verification_pool());
    compare(&mut chain, 6, id, 11, true).unwrap();
    compare(&mut chain, 6, id, 10, false).unwrap();
    for p in [10, 11] {
        assert_eq!(state_of(&chain, id, p), LeaseState::Disputed);
    }
    assert_eq!(
        chain.state.balance(&module_account::verification_pool()),
        pool + 1_400_000,
        "the reserve pays the verifiers of a real disagreement"
    );
    assert_eq!(
        compare(&mut chain, 6, id, 11, true),
        Err(AuctionError::WrongLeaseState {
            id: lease_of(&chain, id, 11),
            state: LeaseState::Disputed
        }),
        "the comparison is over"
    );
    assert!(chain.state.comparison(lease_of(&chain, id, 11)).is_none());
    chain.check(6);
}

#[test]
fn silence_past_the_compare_window_disputes_the_order() {
    let mut chain = Chain::new(never_audit());
    let id = cleared(&mut chain, 2, &[(10, 600_000), (11, 700_000)]);
    reveal(&mut chain, id, &[(10, [1; 32]), (11, [2; 32])]);
    chain.end_block(5);
    compare(&mut chain, 6, id, 10, true).unwrap();
    for h in 6..=7 {
        chain.end_block(h);
        assert_eq!(state_of(&chain, id, 11), LeaseState::Comparing);
    }
    // Judged at 5 with a window of 3: the last statement is taken at 8.
    chain.end_block(8);
    for p in [10, 11] {
        assert_eq!(state_of(&chain, id, p), LeaseState::Disputed);
    }
    assert!(chain.state.comparison(lease_of(&chain, id, 10)).is_none());
    chain.check(8);
}

#[test]
fn bad_statements_are_refused_with_their_own_codes_and_change_nothing() {
    let mut chain = Chain::new(never_audit());
    let id = cleared(&mut chain, 2, &[(10, 600_000), (11, 700_000)]);
    let lease = lease_of(&chain, id, 10);
    assert_eq!(
        compare(&mut chain, 5, id, 10, true),
        Err(AuctionError::WrongLeaseState {
            id: lease,
            state: LeaseState::Open
        }),
        "nothing to compare before the reveals"
    );
    reveal(&mut chain, id, &[(10, [1; 32]), (11, [2; 32])]);
    let other = AuctionMsg::CompareReplicas(MsgCompareReplicas {
        lease_id: lease,
        consistent: false,
    });
    assert_eq!(
        chain.exec(6, 11, other),
        Err(AuctionError::NotLeaseProvider(addr(11))),
        "a provider speaks only for its own lease"
    );
    let unknown = AuctionMsg::CompareReplicas(MsgCompareReplicas {
        lease_id: 999,
        consistent: true,
    });
    assert_eq!(
        chain.exec(6, 10, unknown),
        Err(AuctionError::UnknownLease(999))
    );
    compare(&mut chain, 6, id, 10, true).unwrap();
    assert_eq!(
        compare(&mut chain, 6, id, 10, false),
        Err(AuctionError::AlreadyCompared(lease)),
        "a statement cannot be taken back"
    );
    assert_eq!(state_of(&chain, id, 10), LeaseState::Comparing);
    use gpuchain_types::ModuleError;
    assert_eq!(AuctionError::AlreadyCompared(lease).code(), 35);
    chain.check(6);
}

#[test]
fn results_that_only_looked_close_are_each_re_run_when_drawn() {
    // Three replicas, two equal results and one different; every provider says they agree
    // (the different one colludes, or the honest ones are careless). Each result has its own
    // draw (certain here): one re-run per distinct result, and the close-but-different one
    // falls alone.
    let mut chain = Chain::new(always_audit());
    let id = cleared(
        &mut chain,
        3,
        &[(10, 600_000), (11, 650_000), (12, 700_000)],
    );
    reveal(
        &mut chain,
        id,
        &[(10, [1; 32]), (11, [1; 32]), (12, [2; 32])],
    );
    for p in [10, 11, 12] {
        compare(&mut chain, 6, id, p, true).unwrap();
    }
    let states: Vec<LeaseState> = [10, 11, 12]
        .iter()
        .map(|p| state_of(&chain, id, *p))
        .collect();
    assert_eq!(
        states
            .iter()
            .filter(|s| **s == LeaseState::AuditPending)
            .count(),
        2,
        "one re-run per distinct result: {states:?}"
    );
    assert_eq!(
        states
            .iter()
            .filter(|s| **s == LeaseState::AuditFollowing)
            .count(),
        1,
        "{states:?}"
    );
    assert_eq!(state_of(&chain, id, 12), LeaseState::AuditPending);
    for (p, charge) in [(10, 350_000), (11, 350_000), (12, 700_000)] {
        let lease = chain.state.lease(lease_of(&chain, id, p)).unwrap();
        assert_eq!(
            lease.verification_charge, charge,
            "each result's fee shared by the leases that revealed it"
        );
    }
    let close = lease_of(&chain, id, 12);
    let mut fork = gpuchain_types::Overlay::new(&chain.state);
    apply_verdict(
        &mut fork,
        &ctx(7),
        close,
        Verdict::Faulty {
            prover: Some(addr(3)),
            costs: 700_000,
        },
        &[],
    )
    .unwrap();
    let (writes, _) = fork.into_parts();
    chain.state.apply(writes);
    assert_eq!(state_of(&chain, id, 12), LeaseState::Faulted);
    assert!(
        [10, 11]
            .iter()
            .all(|p| state_of(&chain, id, *p) != LeaseState::Faulted),
        "a different result's fault does not reach the others"
    );
    let honest = [10, 11]
        .into_iter()
        .map(|p| lease_of(&chain, id, p))
        .find(|l| chain.state.lease(*l).unwrap().state == LeaseState::AuditPending)
        .unwrap();
    let mut fork = Overlay::new(&chain.state);
    apply_verdict(&mut fork, &ctx(7), honest, Verdict::Honest, &[]).unwrap();
    let (writes, _) = fork.into_parts();
    chain.state.apply(writes);
    for p in [10, 11] {
        assert_eq!(state_of(&chain, id, p), LeaseState::Accepted);
    }
    chain.check(7);
}
