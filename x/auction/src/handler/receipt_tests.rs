//! No lease is paid before someone other than its provider fetched its output: the
//! client's receipt, a verdict or the replicas' comparison counts; otherwise a verifier
//! checks the output can be fetched, and an output nobody can get is a wrong result.

use gpuchain_slashing::SlashingRead;
use gpuchain_types::{ModuleError, Overlay};

use super::test_steps::{cleared, compare, confirm, lease_of, reveal_all as reveal, state_of};
use crate::test_utils::*;
use crate::{
    apply_verdict, AuctionError, AuctionMsg, AuctionParams, AuctionRead, LeaseState,
    MsgConfirmReceipt, Verdict,
};

fn no_audits() -> AuctionParams {
    AuctionParams {
        audit_min_ppm: 0,
        audit_max_ppm: 0,
        audit_deterrence_ppm: 0,
        ..test_params()
    }
}

fn verdict(chain: &mut Chain, h: u64, lease: u64, verdict: Verdict) {
    let mut fork = Overlay::new(&chain.state);
    apply_verdict(&mut fork, &ctx(h), lease, verdict, &[]).unwrap();
    let (writes, events) = fork.into_parts();
    chain.state.apply(writes);
    chain.events.extend(events);
    chain.check(h);
}

#[test]
fn an_unfetched_lease_is_paid_only_after_a_verifier_fetched_its_output() {
    let mut chain = Chain::new(no_audits());
    let id = cleared(&mut chain, 1, &[(10, 600_000)]);
    reveal(&mut chain, id, &[(10, [7; 32])]);
    let lease_id = lease_of(&chain, id, 10);
    let provider_before = chain.balance(10);
    for h in 5..=9 {
        chain.end_block(h);
    }
    let lease = chain.state.lease(lease_id).unwrap();
    assert_eq!(lease.state, LeaseState::AvailabilityPending, "due at 9");
    assert_eq!(lease.verdict_deadline_height, Some(15));
    let pending: Vec<u64> = chain
        .state
        .verdict_pending_leases()
        .iter()
        .map(|l| l.id)
        .collect();
    assert_eq!(pending, vec![lease_id], "x/verify draws a verifier for it");
    assert_eq!(chain.balance(10), provider_before, "not paid yet");
    verdict(&mut chain, 10, lease_id, Verdict::Honest);
    let lease = chain.state.lease(lease_id).unwrap();
    assert_eq!((lease.state, lease.fetched), (LeaseState::Paid, true));
    assert_eq!(lease.verification_charge, 6_000, "the 1% availability fee");
    // 600,000 less the fee, less the 10% take of the rest.
    assert_eq!(chain.balance(10), provider_before + 534_600);
}

#[test]
fn an_output_nobody_can_fetch_is_a_wrong_result_and_its_twin_is_untouched() {
    let mut chain = Chain::new(no_audits());
    let id = cleared(&mut chain, 2, &[(10, 600_000), (11, 700_000)]);
    reveal(&mut chain, id, &[(10, [7; 32]), (11, [7; 32])]);
    // The client got 11's copy only.
    confirm(&mut chain, 5, id, 11);
    let client_before = chain.balance(1);
    for h in 5..=9 {
        chain.end_block(h);
    }
    assert_eq!(state_of(&chain, id, 10), LeaseState::AvailabilityPending);
    assert_eq!(state_of(&chain, id, 11), LeaseState::Paid);
    let unavailable = lease_of(&chain, id, 10);
    verdict(
        &mut chain,
        10,
        unavailable,
        Verdict::Faulty {
            prover: None,
            costs: 0,
        },
    );
    assert_eq!(state_of(&chain, id, 10), LeaseState::Faulted);
    assert_eq!(state_of(&chain, id, 11), LeaseState::Paid);
    assert_eq!(chain.state.slash_records_of(&addr(10)).len(), 1);
    assert!(chain.state.slash_records_of(&addr(11)).is_empty());
    assert!(
        chain.balance(1) >= client_before + 700_000,
        "refunded the replica, plus its share of the slash"
    );
}

#[test]
fn replicas_that_fetched_each_others_outputs_are_paid_without_a_check() {
    let mut chain = Chain::new(no_audits());
    let id = cleared(&mut chain, 2, &[(10, 600_000), (11, 700_000)]);
    reveal(&mut chain, id, &[(10, [7; 32]), (11, [8; 32])]);
    assert_eq!(state_of(&chain, id, 10), LeaseState::Comparing);
    compare(&mut chain, 6, id, 10, true).unwrap();
    compare(&mut chain, 6, id, 11, true).unwrap();
    for p in [10, 11] {
        assert!(chain.state.lease(lease_of(&chain, id, p)).unwrap().fetched);
    }
    for h in 6..=10 {
        chain.end_block(h);
    }
    assert_eq!(state_of(&chain, id, 10), LeaseState::Paid);
    assert_eq!(state_of(&chain, id, 11), LeaseState::Paid);
}

#[test]
fn with_no_verifier_an_availability_check_falls_back_to_payment() {
    let mut chain = Chain::new(no_audits());
    let id = cleared(&mut chain, 1, &[(10, 600_000)]);
    reveal(&mut chain, id, &[(10, [7; 32])]);
    for h in 5..=14 {
        chain.end_block(h);
    }
    assert_eq!(state_of(&chain, id, 10), LeaseState::AvailabilityPending);
    chain.end_block(15);
    let lease = chain.state.lease(lease_of(&chain, id, 10)).unwrap();
    assert_eq!((lease.state, lease.fetched), (LeaseState::Paid, false));
}

#[test]
fn only_the_client_confirms_a_revealed_result_and_only_once() {
    let mut chain = Chain::new(no_audits());
    let id = cleared(&mut chain, 1, &[(10, 600_000)]);
    let lease_id = lease_of(&chain, id, 10);
    let msg = AuctionMsg::ConfirmReceipt(MsgConfirmReceipt { lease_id });
    assert_eq!(
        chain.exec(5, 1, msg.clone()),
        Err(AuctionError::WrongLeaseState {
            id: lease_id,
            state: LeaseState::Open
        }),
        "nothing revealed yet"
    );
    reveal(&mut chain, id, &[(10, [7; 32])]);
    assert_eq!(
        chain.exec(5, 10, msg.clone()),
        Err(AuctionError::NotOrderClient(addr(10))),
        "a provider cannot vouch for its own output"
    );
    let unknown = AuctionMsg::ConfirmReceipt(MsgConfirmReceipt { lease_id: 999 });
    assert_eq!(
        chain.exec(5, 1, unknown),
        Err(AuctionError::UnknownLease(999))
    );
    chain.exec(5, 1, msg.clone()).unwrap();
    assert_eq!(
        chain.exec(5, 1, msg.clone()),
        Err(AuctionError::AlreadyConfirmed(lease_id))
    );
    assert_eq!(AuctionError::AlreadyConfirmed(lease_id).code(), 36);
    assert_eq!(
        chain
            .events
            .iter()
            .filter(|e| e.kind == "auction.receipt_confirmed")
            .count(),
        1
    );
    for h in 5..=9 {
        chain.end_block(h);
    }
    assert_eq!(state_of(&chain, id, 10), LeaseState::Paid);
    assert_eq!(
        chain.exec(10, 1, msg),
        Err(AuctionError::WrongLeaseState {
            id: lease_id,
            state: LeaseState::Paid
        })
    );
}
