//! Verification end to end on an in-memory chain; supply, escrow and module-account
//! invariants after every block (`Chain::check`).

use gpuchain_auction::{module_account::verification_pool, AuctionParams, AuctionRead, LeaseState};
use gpuchain_reputation::ReputationRead;
use gpuchain_slashing::SlashingRead;
use gpuchain_types::{MemState, ModuleError};

use crate::test_utils::*;
use crate::{
    challenge_commitment, module_account, CaseOutcome, CaseStage, MsgAppeal, MsgBondVerifier,
    MsgCommitChallenge, MsgRegisterVerifier, MsgRevealChallenge, MsgSubmitVerdict,
    MsgUnbondVerifier, VerdictKind, VerifyError, VerifyMsg, VerifyParams, VerifyRead,
};

pub(super) fn verdict(lease_id: u64, v: VerdictKind) -> VerifyMsg {
    VerifyMsg::SubmitVerdict(MsgSubmitVerdict {
        lease_id,
        output_hash: [4; 32],
        verdict: v,
    })
}

pub(super) fn seed(a: &gpuchain_types::Address) -> u8 {
    a.0[0]
}

/// A k = 1 order from client 1 won by provider 10, delivered at 5, sampled for audit and
/// assigned in the end-block of 5. Returns (lease id, assigned verifier seed).
pub(super) fn audited(chain: &mut Chain) -> (u64, u8) {
    let order = chain.cleared_order(1, 1, &[10]);
    chain.deliver(5, order, &[[5; 32]]);
    chain.end_block(5);
    let lease = chain.state.leases_of_order(order)[0].clone();
    assert_eq!(lease.state, LeaseState::AuditPending);
    let case = chain.state.case(lease.id).unwrap();
    (lease.id, seed(&case.assignee.unwrap()))
}

#[test]
fn verifiers_register_bond_and_unbond_through_the_queue() {
    let mut chain = Chain::new();
    let n = NEWCOMER;
    let reg = |bond| VerifyMsg::RegisterVerifier(MsgRegisterVerifier { bond });
    assert_eq!(chain.exec(1, n, reg(0)), Err(VerifyError::ZeroAmount));
    assert_eq!(
        chain.exec(1, n, reg(GPU)),
        Err(VerifyError::BelowMinStake {
            bond: GPU,
            min: 100 * GPU
        })
    );
    assert!(matches!(
        chain.exec(1, n, reg(600 * GPU)),
        Err(VerifyError::InsufficientFunds { .. })
    ));
    assert_eq!(
        chain.exec(1, 30, reg(100 * GPU)),
        Err(VerifyError::VerifierExists(addr(30)))
    );
    chain.exec(1, n, reg(100 * GPU)).unwrap();
    assert_eq!(chain.balance(&addr(n)), 400 * GPU);
    assert!(chain
        .state
        .verifier(&addr(n))
        .unwrap()
        .is_eligible(100 * GPU, 1));

    let bond = |amount| VerifyMsg::BondVerifier(MsgBondVerifier { amount });
    let unbond = |amount| VerifyMsg::UnbondVerifier(MsgUnbondVerifier { amount });
    assert_eq!(chain.exec(2, n, bond(0)), Err(VerifyError::ZeroAmount));
    assert_eq!(
        chain.exec(2, 1, bond(GPU)),
        Err(VerifyError::NotAVerifier(addr(1)))
    );
    assert!(matches!(
        chain.exec(2, n, bond(1_000 * GPU)),
        Err(VerifyError::InsufficientFunds { .. })
    ));
    chain.exec(2, n, bond(50 * GPU)).unwrap();
    assert_eq!(chain.state.verifier(&addr(n)).unwrap().bonded, 150 * GPU);
    assert_eq!(chain.exec(2, n, unbond(0)), Err(VerifyError::ZeroAmount));
    assert_eq!(
        chain.exec(2, 1, unbond(GPU)),
        Err(VerifyError::NotAVerifier(addr(1)))
    );
    assert_eq!(
        chain.exec(2, n, unbond(151 * GPU)),
        Err(VerifyError::InsufficientBond {
            bonded: 150 * GPU,
            requested: 151 * GPU
        })
    );
    chain.exec(2, n, unbond(60 * GPU)).unwrap();
    let v = chain.state.verifier(&addr(n)).unwrap();
    assert_eq!(v.bonded, 90 * GPU);
    assert!(!v.is_eligible(100 * GPU, 2), "below the minimum: not drawn");
    assert_eq!(chain.balance(&module_account::verify_unbonding()), 60 * GPU);
    chain.run_to(2, 11);
    assert_eq!(chain.balance(&addr(n)), 350 * GPU, "not before height 12");
    chain.end_block(12);
    assert_eq!(chain.balance(&addr(n)), 410 * GPU);
    assert_eq!(chain.balance(&module_account::verify_unbonding()), 0);
    assert_eq!(chain.events_of("verify.unbonding_completed").len(), 1);
}

#[test]
fn a_sampled_lease_is_assigned_in_the_same_block_deterministically() {
    let mut a = Chain::new();
    let mut b = Chain::new();
    let (lease, assignee) = audited(&mut a);
    let (lease_b, assignee_b) = audited(&mut b);
    assert_eq!(
        (lease, assignee),
        (lease_b, assignee_b),
        "same blocks, same draw"
    );
    assert_eq!(a.state, b.state, "replicas agree on every byte");
    assert!(VERIFIERS.contains(&assignee));
    let case = a.state.case(lease).unwrap();
    assert_eq!(case.deadline_height, 10, "assigned at 5, deadline 5 blocks");
    assert_eq!(case.stage, CaseStage::AwaitingVerdict);
    let event = a.events_of("verify.assigned")[0].clone();
    assert_eq!(event.get("lease_id"), Some(lease.to_string().as_str()));
    assert_eq!(
        event.get("verifier"),
        Some(addr(assignee).to_string().as_str())
    );
    assert_eq!(event.get("deadline"), Some("10"));
    assert_eq!(a.state.verifier(&addr(assignee)).unwrap().open_cases, 1);
    // Another block hash draws among the same candidates by another seed; over many leases
    // every verifier is drawn and never the provider or the client.
    let mut case = case;
    case.served.clear();
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..300u64 {
        case.lease_id = i;
        let drawn = crate::assign::draw(&a.state, &ctx(5 + i), &case).unwrap();
        assert!(drawn != case.provider && drawn != case.client);
        seen.insert(seed(&drawn));
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), VERIFIERS.to_vec());
    case.served = VERIFIERS.iter().map(|&v| addr(v)).collect();
    assert_eq!(crate::assign::draw(&a.state, &ctx(5), &case), None);
}

#[test]
fn verifiers_are_drawn_in_proportion_to_their_bond_not_their_number() {
    let mut chain = Chain::new();
    let (lease, _) = audited(&mut chain);
    // 30 bonds 300 GPU more: 500 of the 900 GPU verifier stake.
    chain
        .exec(
            6,
            30,
            VerifyMsg::BondVerifier(MsgBondVerifier { amount: 300 * GPU }),
        )
        .unwrap();
    let mut case = chain.state.case(lease).unwrap();
    case.served.clear();
    let mut drawn = std::collections::BTreeMap::<u8, u32>::new();
    for i in 0..3_000u64 {
        case.lease_id = i;
        let v = crate::assign::draw(&chain.state, &ctx(7 + i), &case).unwrap();
        *drawn.entry(seed(&v)).or_default() += 1;
    }
    // Expected 1,667 / 667 / 667 of 3,000; the bounds are about five standard deviations.
    let heavy = drawn[&30];
    assert!((1_530..=1_800).contains(&heavy), "{drawn:?}");
    for light in [31, 32] {
        assert!((553..=781).contains(&drawn[&light]), "{drawn:?}");
    }
}

/// An audited lease's case, on a chain where each `(account, funder)` pair was first funded
/// so, its served list cleared for fresh draws.
fn case_with_funders(funders: &[(u8, u8)]) -> (Chain, crate::Case) {
    use gpuchain_types::{Overlay, StateWriteExt};
    let mut chain = Chain::new();
    let (lease, _) = audited(&mut chain);
    let mut fork = Overlay::new(&chain.state);
    for (account, funder) in funders {
        fork.put(
            gpuchain_bank::state_key::funder(&addr(*account)),
            &addr(*funder),
        );
    }
    let (writes, _) = fork.into_parts();
    chain.state.apply(writes);
    let mut case = chain.state.case(lease).unwrap();
    case.served.clear();
    (chain, case)
}

/// The verifiers drawn for `case` over 300 subjects.
fn drawn_for(chain: &Chain, case: &mut crate::Case) -> std::collections::BTreeSet<u8> {
    (0..300u64)
        .map(|i| {
            case.lease_id = i;
            seed(&crate::assign::draw(&chain.state, &ctx(7 + i), case).unwrap())
        })
        .collect()
}

#[test]
fn verifiers_tied_to_the_orders_parties_by_funding_are_never_drawn() {
    // 30 was first funded by the client; 31 first funded the provider. Only 32 may judge.
    let (chain, mut case) = case_with_funders(&[(30, 1), (10, 31)]);
    assert_eq!(drawn_for(&chain, &mut case), [32].into());
    // A verifier tied to nobody on the order is drawn as before.
    case.client = addr(2);
    case.provider = addr(11);
    case.order_id = u64::MAX;
    assert_eq!(drawn_for(&chain, &mut case), [30, 31, 32].into());
}

#[test]
fn a_verifier_that_shares_only_a_funder_with_a_party_is_still_drawn() {
    // Account 40 (an exchange, say) first funded both verifier 30 and provider 10; it is no
    // party to the order, so 30 is drawn as before.
    let (chain, mut case) = case_with_funders(&[(30, 40), (10, 40)]);
    assert_eq!(drawn_for(&chain, &mut case), [30, 31, 32].into());
}

#[test]
fn an_honest_verdict_stands_after_the_appeal_window_and_the_provider_is_paid() {
    let mut chain = Chain::new();
    let (lease, v) = audited(&mut chain);
    let other = VERIFIERS.iter().copied().find(|x| *x != v).unwrap();
    let fee_before = chain.balance(&addr(v));
    assert_eq!(
        chain.exec(6, other, verdict(lease, VerdictKind::Honest)),
        Err(VerifyError::NotAssigned {
            lease_id: lease,
            signer: addr(other)
        })
    );
    assert_eq!(
        chain.exec(6, v, verdict(99, VerdictKind::Honest)),
        Err(VerifyError::NoCase(99))
    );
    assert_eq!(
        chain.exec(11, v, verdict(lease, VerdictKind::Honest)),
        Err(VerifyError::VerdictTooLate {
            deadline: 10,
            height: 11
        })
    );
    chain
        .exec(6, v, verdict(lease, VerdictKind::Honest))
        .unwrap();
    assert_eq!(
        chain.exec(6, v, verdict(lease, VerdictKind::Honest)),
        Err(VerifyError::NotAwaitingVerdict(lease))
    );
    chain.run_to(6, 8);
    assert_eq!(
        chain.state.lease(lease).unwrap().state,
        LeaseState::AuditPending
    );
    chain.end_block(9);
    let l = chain.state.lease(lease).unwrap();
    assert_eq!(
        l.state,
        LeaseState::Accepted,
        "applied when the window closed"
    );
    let case = chain.state.case(lease).unwrap();
    assert_eq!(case.outcome, CaseOutcome::Settled(VerdictKind::Honest));
    assert_eq!(
        chain.balance(&addr(v)),
        fee_before + GPU / 2,
        "audit fee = the price (the lone bidder's ask)"
    );
    assert_eq!(chain.state.verifier(&addr(v)).unwrap().open_cases, 0);
    let provider_before = chain.balance(&addr(10));
    let pool_before = chain.balance(&verification_pool());
    chain.run_to(10, 13);
    assert_eq!(chain.state.lease(lease).unwrap().state, LeaseState::Paid);
    // Audited with certainty (the test chain audits every result), the lease's charge is
    // the whole fee: it pays back to the pool exactly what its verifier was paid.
    assert_eq!(
        chain.state.lease(lease).unwrap().verification_charge,
        GPU / 2
    );
    assert_eq!(chain.balance(&addr(10)), provider_before);
    assert_eq!(chain.balance(&verification_pool()), pool_before + GPU / 2);
    assert!(chain.state.reputation(&addr(10)).challenges_passed >= 1);
}

#[test]
fn a_faulty_verdict_slashes_the_provider_refunds_the_client_and_rewards_the_verifier() {
    let mut chain = Chain::new();
    let (lease, v) = audited(&mut chain);
    let (client, verifier) = (chain.balance(&addr(1)), chain.balance(&addr(v)));
    let pool = chain.balance(&verification_pool());
    let score = chain.state.score(&addr(10), 6);
    chain
        .exec(6, v, verdict(lease, VerdictKind::Faulty))
        .unwrap();
    chain.run_to(6, 9);
    assert_eq!(chain.state.lease(lease).unwrap().state, LeaseState::Faulted);
    let slash = &chain.state.slash_records_of(&addr(10))[0];
    assert_eq!(slash.outcome.slashed, 300 * GPU);
    // The cheater pays for its audit: the fee comes out of the slash, not the pool.
    assert_eq!(slash.outcome.to_costs, GPU / 2);
    assert_eq!(chain.balance(&verification_pool()), pool);
    assert_eq!(slash.prover, Some(addr(v)));
    assert_eq!(
        chain.balance(&addr(1)),
        client + GPU / 2 + slash.outcome.to_client
    );
    assert_eq!(
        chain.balance(&addr(v)),
        verifier + slash.outcome.to_prover + GPU / 2,
        "prover share and audit fee"
    );
    assert!(chain.state.score(&addr(10), 9) < score);
}

#[test]
fn a_missed_deadline_slashes_the_verifier_and_reassigns_once_then_the_fallback_applies() {
    // With no wait beyond the auction's verdict window, the fallback applies at once.
    let no_wait = crate::VerifyParams {
        max_verdict_wait_blocks: 0,
        ..verify_params()
    };
    let mut chain = Chain::with(auction_params(), no_wait, &VERIFIERS);
    let (lease, first) = audited(&mut chain);
    let pool = chain.balance(&verification_pool());
    chain.run_to(6, 10);
    let v = chain.state.verifier(&addr(first)).unwrap();
    assert_eq!(v.bonded, 196 * GPU, "2% of 200 GPU");
    assert_eq!((v.misses, v.open_cases, v.jailed_until), (1, 0, 30));
    assert_eq!(chain.balance(&verification_pool()), pool + 4 * GPU);
    let case = chain.state.case(lease).unwrap();
    let second = seed(&case.assignee.unwrap());
    assert_ne!(second, first, "reassigned to another verifier");
    assert!(case.reassigned);
    assert_eq!(case.deadline_height, 15);
    assert_eq!(
        chain.state.lease(lease).unwrap().verdict_deadline_height,
        Some(16)
    );
    assert_eq!(
        chain.exec(11, first, verdict(lease, VerdictKind::Honest)),
        Err(VerifyError::NotAssigned {
            lease_id: lease,
            signer: addr(first)
        })
    );
    chain.run_to(11, 15);
    assert_eq!(chain.state.verifier(&addr(second)).unwrap().misses, 1);
    let case = chain.state.case(lease).unwrap();
    assert_eq!(
        (case.stage, case.outcome),
        (CaseStage::Closed, CaseOutcome::NoVerdict)
    );
    assert_eq!(
        chain.state.lease(lease).unwrap().state,
        LeaseState::AuditPending
    );
    chain.end_block(16);
    assert_eq!(
        chain.state.lease(lease).unwrap().state,
        LeaseState::Accepted,
        "the auction's audit fallback"
    );
    assert_eq!(chain.events_of("verify.verifier_slashed").len(), 2);
}

#[test]
fn silent_verifiers_do_not_make_an_audit_disappear() {
    // Both drawn verifiers stay silent: the case closes without a verdict, and a fresh one is
    // drawn among the rest instead of letting the unverified result be accepted.
    let mut chain = Chain::new();
    let (lease, first) = audited(&mut chain);
    chain.run_to(6, 10);
    let second = seed(&chain.state.case(lease).unwrap().assignee.unwrap());
    chain.run_to(11, 15);
    let case = chain.state.case(lease).unwrap();
    let third = seed(&case.assignee.unwrap());
    assert!(
        third != first && third != second,
        "neither silent verifier again"
    );
    assert_eq!((case.round, case.stage), (0, CaseStage::AwaitingVerdict));
    assert!(case.served.contains(&addr(first)) && case.served.contains(&addr(second)));
    chain.run_to(16, 17);
    assert_eq!(
        chain.state.lease(lease).unwrap().state,
        LeaseState::AuditPending,
        "held for the new case past the auction's verdict window"
    );
    chain
        .exec(18, third, verdict(lease, VerdictKind::Faulty))
        .unwrap();
    chain.run_to(18, 30);
    assert_eq!(chain.state.lease(lease).unwrap().state, LeaseState::Faulted);
}

#[test]
fn an_appeal_overturned_by_two_verifiers_slashes_the_first_and_returns_the_deposit() {
    let mut chain = Chain::new();
    let (lease, a) = audited(&mut chain);
    chain
        .exec(6, a, verdict(lease, VerdictKind::Faulty))
        .unwrap();
    let appeal = VerifyMsg::Appeal(MsgAppeal { lease_id: lease });
    assert_eq!(
        chain.exec(7, 1, appeal.clone()),
        Err(VerifyError::NotAppellant(addr(1)))
    );
    assert_eq!(
        chain.exec(7, 10, VerifyMsg::Appeal(MsgAppeal { lease_id: 77 })),
        Err(VerifyError::NoCase(77))
    );
    assert_eq!(
        chain.exec(10, 10, appeal.clone()),
        Err(VerifyError::AppealWindowClosed { end: 9 })
    );
    let provider = chain.balance(&addr(10));
    chain.exec(7, 10, appeal.clone()).unwrap();
    assert_eq!(
        chain.exec(7, 10, appeal.clone()),
        Err(VerifyError::NotAppealable(lease))
    );
    assert_eq!(chain.balance(&addr(10)), provider - 10 * GPU);
    let case = chain.state.case(lease).unwrap();
    let b = seed(&case.assignee.unwrap());
    assert_ne!(b, a);
    assert_eq!((case.round, case.deadline_height), (1, 12));
    chain
        .exec(8, b, verdict(lease, VerdictKind::Honest))
        .unwrap();
    let case = chain.state.case(lease).unwrap();
    let c = seed(&case.assignee.unwrap());
    assert!(c != a && c != b, "the tie-breaker is the third verifier");
    assert_eq!(case.round, 2);
    let (fee_b, fee_c) = (chain.balance(&addr(b)), chain.balance(&addr(c)));
    chain
        .exec(9, c, verdict(lease, VerdictKind::Honest))
        .unwrap();
    chain.end_block(9);
    let case = chain.state.case(lease).unwrap();
    assert_eq!(case.outcome, CaseOutcome::Settled(VerdictKind::Honest));
    let first = chain.state.verifier(&addr(a)).unwrap();
    assert_eq!(
        (first.bonded, first.overturned),
        (140 * GPU, 1),
        "30% of 200 GPU"
    );
    // Deposit back plus half of the 60 GPU slash.
    assert_eq!(chain.balance(&addr(10)), provider + 30 * GPU);
    // One audit fee per case, shared by the two verifiers whose verdict stood.
    assert_eq!(chain.balance(&addr(b)), fee_b + GPU / 4);
    assert_eq!(chain.balance(&addr(c)), fee_c + GPU / 4);
    assert_eq!(
        chain.state.lease(lease).unwrap().state,
        LeaseState::Accepted
    );
    assert!(
        chain.state.slash_records_of(&addr(10)).is_empty(),
        "never slashed"
    );
    assert_eq!(chain.balance(&module_account::verify_appeals()), 0);
    let settled = chain.events_of("verify.settled")[0].clone();
    assert_eq!(settled.get("overturned"), Some("true"));
}

/// A chain that spot-checks every unappealed `honest` verdict.
fn spot_checking() -> Chain {
    let verify = VerifyParams {
        spot_check_ppm: 1_000_000,
        ..verify_params()
    };
    Chain::with(auction_params(), verify, &VERIFIERS)
}

#[test]
fn a_lazy_honest_verdict_on_a_wrong_result_is_spot_checked_and_slashed() {
    let mut chain = spot_checking();
    let (lease, lazy) = audited(&mut chain);
    let client = chain.balance(&addr(1));
    chain
        .exec(6, lazy, verdict(lease, VerdictKind::Honest))
        .unwrap();
    chain.run_to(7, 9);
    // The window closed unappealed; the spot check holds the lease for a second verdict.
    let case = chain.state.case(lease).unwrap();
    let checker = seed(&case.assignee.expect("a second verifier is drawn"));
    assert_ne!(checker, lazy);
    assert_eq!((case.round, case.appellant, case.deposit), (1, None, 0));
    assert_eq!(chain.events_of("verify.spot_checked").len(), 1);
    assert_eq!(
        chain.state.lease(lease).unwrap().state,
        LeaseState::AuditPending,
        "not paid while checked"
    );
    chain
        .exec(10, checker, verdict(lease, VerdictKind::Faulty))
        .unwrap();
    let tie = seed(&chain.state.case(lease).unwrap().assignee.unwrap());
    assert!(tie != lazy && tie != checker);
    chain
        .exec(11, tie, verdict(lease, VerdictKind::Faulty))
        .unwrap();
    chain.end_block(11);
    let case = chain.state.case(lease).unwrap();
    assert_eq!(case.outcome, CaseOutcome::Settled(VerdictKind::Faulty));
    let lazy_record = chain.state.verifier(&addr(lazy)).unwrap();
    assert_eq!(
        (lazy_record.bonded, lazy_record.overturned),
        (140 * GPU, 1),
        "the rubber stamp loses 30% of its 200 GPU"
    );
    assert_eq!(chain.state.lease(lease).unwrap().state, LeaseState::Faulted);
    assert_eq!(chain.state.slash_records_of(&addr(10)).len(), 1);
    assert!(chain.balance(&addr(1)) > client, "the client is refunded");
}

#[test]
fn a_spot_check_that_agrees_pays_the_lease_and_shares_one_fee() {
    let mut chain = spot_checking();
    let (lease, first) = audited(&mut chain);
    let pool = chain.balance(&verification_pool());
    chain
        .exec(6, first, verdict(lease, VerdictKind::Honest))
        .unwrap();
    chain.run_to(7, 9);
    let checker = seed(&chain.state.case(lease).unwrap().assignee.unwrap());
    let (a, b) = (chain.balance(&addr(first)), chain.balance(&addr(checker)));
    chain
        .exec(10, checker, verdict(lease, VerdictKind::Honest))
        .unwrap();
    let case = chain.state.case(lease).unwrap();
    assert_eq!(case.outcome, CaseOutcome::Settled(VerdictKind::Honest));
    assert_eq!(chain.balance(&addr(first)), a + GPU / 4);
    assert_eq!(chain.balance(&addr(checker)), b + GPU / 4);
    assert_eq!(
        chain.balance(&verification_pool()),
        pool - GPU / 2,
        "one fee"
    );
    assert_eq!(
        chain.state.lease(lease).unwrap().state,
        LeaseState::Accepted
    );
    assert!(chain.events_of("verify.verifier_slashed").is_empty());
}

#[test]
fn faulty_and_appealed_verdicts_are_not_spot_checked() {
    let mut chain = spot_checking();
    let (lease, v) = audited(&mut chain);
    chain
        .exec(6, v, verdict(lease, VerdictKind::Faulty))
        .unwrap();
    chain.run_to(7, 9);
    assert!(chain.events_of("verify.spot_checked").is_empty());
    assert_eq!(
        chain.state.case(lease).unwrap().outcome,
        CaseOutcome::Settled(VerdictKind::Faulty)
    );
}

#[test]
fn a_closed_order_leaves_nothing_in_state_a_retention_after_it_closed() {
    // Retention 5 s (a block a second here): an audited, paid order, its bid, lease, case and indexes all go.
    let auction = gpuchain_auction::AuctionParams {
        retention_secs: 5,
        ..auction_params()
    };
    let mut chain = Chain::with(auction, verify_params(), &VERIFIERS);
    let keys = |chain: &Chain| -> std::collections::BTreeSet<String> {
        chain.state.entries().keys().cloned().collect()
    };
    let before = keys(&chain);
    let (lease, v) = audited(&mut chain);
    chain
        .exec(6, v, verdict(lease, VerdictKind::Honest))
        .unwrap();
    chain.auction(
        6,
        1,
        gpuchain_auction::AuctionMsg::ConfirmReceipt(gpuchain_auction::MsgConfirmReceipt {
            lease_id: lease,
        }),
    );
    chain.run_to(6, 13);
    let order = chain.state.lease(lease).unwrap().order_id;
    assert_eq!(chain.state.lease(lease).unwrap().state, LeaseState::Paid);
    assert!(
        chain.state.case(lease).is_some(),
        "kept through the retention"
    );
    chain.run_to(14, 20);
    assert!(chain.state.order(order).is_none());
    assert!(chain.state.lease(lease).is_none());
    assert!(chain.state.case(lease).is_none());
    assert_eq!(chain.events_of("auction.order_retired").len(), 1);
    // What is left beyond the state before the order: id counters, the validator's reward,
    // reputation (its own bounded history), the first funder of an account the order paid
    // for the first time (one per account) and the pool's per-block outflow record.
    let left: Vec<String> = keys(&chain).difference(&before).cloned().collect();
    for key in &left {
        assert!(
            key.starts_with("auction/next_")
                || key.starts_with("auction/rewards/")
                || key.starts_with("reputation/")
                || key.starts_with("bank/funders/")
                || key == "verify/pool_outflow",
            "{key} outlived its order: {left:?}"
        );
    }
}

#[test]
fn an_appeal_the_second_verifier_confirms_forfeits_the_deposit() {
    let mut chain = Chain::new();
    let (lease, a) = audited(&mut chain);
    chain
        .exec(6, a, verdict(lease, VerdictKind::Honest))
        .unwrap();
    let appeal = VerifyMsg::Appeal(MsgAppeal { lease_id: lease });
    assert_eq!(
        chain.exec(7, 10, appeal.clone()),
        Err(VerifyError::NotAppellant(addr(10)))
    );
    let pool = chain.balance(&verification_pool());
    chain.exec(7, 1, appeal).unwrap();
    let b = seed(&chain.state.case(lease).unwrap().assignee.unwrap());
    chain
        .exec(8, b, verdict(lease, VerdictKind::Honest))
        .unwrap();
    chain.end_block(8);
    assert_eq!(
        chain.state.case(lease).unwrap().outcome,
        CaseOutcome::Settled(VerdictKind::Honest)
    );
    // The pool got the 10 GPU deposit and paid one fee of the 0.5 GPU price, shared.
    assert_eq!(
        chain.balance(&verification_pool()),
        pool + 10 * GPU - GPU / 2
    );
    assert_eq!(
        chain.state.lease(lease).unwrap().state,
        LeaseState::Accepted
    );
}

#[test]
fn an_appeal_without_any_other_verifier_is_refused() {
    let mut chain = Chain::with(auction_params(), verify_params(), &[30]);
    let (lease, a) = audited(&mut chain);
    assert_eq!(a, 30);
    chain
        .exec(6, a, verdict(lease, VerdictKind::Faulty))
        .unwrap();
    assert_eq!(
        chain.exec(7, 10, VerifyMsg::Appeal(MsgAppeal { lease_id: lease })),
        Err(VerifyError::NoVerifierAvailable(lease))
    );
    let poor = crate::VerifyParams {
        appeal_deposit: 10_000 * GPU,
        ..verify_params()
    };
    let mut chain = Chain::with(auction_params(), poor, &VERIFIERS);
    let (lease, a) = audited(&mut chain);
    chain
        .exec(6, a, verdict(lease, VerdictKind::Faulty))
        .unwrap();
    assert!(matches!(
        chain.exec(7, 10, VerifyMsg::Appeal(MsgAppeal { lease_id: lease })),
        Err(VerifyError::InsufficientFunds { .. })
    ));
}

#[test]
fn without_verifiers_the_auction_fallback_applies_only_after_the_wait() {
    let wait = crate::VerifyParams {
        max_verdict_wait_blocks: 20,
        ..verify_params()
    };
    let mut chain = Chain::with(auction_params(), wait, &[]);
    let order = chain.cleared_order(1, 1, &[10]);
    chain.deliver(5, order, &[[5; 32]]);
    let lease = chain.state.leases_of_order(order)[0].clone();
    let wait_end = lease.reveal_end_height + 20;
    chain.run_to(5, wait_end - 1);
    assert!(chain.state.case(lease.id).is_none());
    assert_eq!(
        chain.state.lease(lease.id).unwrap().state,
        LeaseState::AuditPending,
        "not accepted unverified while the wait lasts (the verdict window alone ends at 11)"
    );
    chain.run_to(wait_end, wait_end + 2);
    assert_eq!(
        chain.state.lease(lease.id).unwrap().state,
        LeaseState::Accepted
    );
}

#[test]
fn disputed_replicas_each_get_a_verifier_that_is_not_a_replica() {
    let mut chain = Chain::new();
    let order = chain.cleared_order(1, 1, &[10, 11]);
    chain.deliver(5, order, &[[1; 32], [2; 32]]);
    chain.end_block(5);
    for lease in chain.state.leases_of_order(order) {
        assert_eq!(lease.state, LeaseState::Disputed);
        let case = chain.state.case(lease.id).unwrap();
        let v = case.assignee.unwrap();
        assert!(v != addr(10) && v != addr(11) && v != addr(1));
    }
}

/// A ringer: verifier 30 commits at 1 for poster client 2, which posts a k = 1 order at 2,
/// won by provider 10, which returns `result` at 6. Audits are off, so the lease is accepted.
fn ringer(result: [u8; 32]) -> (Chain, u64, u64) {
    ringer_with(verify_params(), result)
}

/// [`ringer`] on a chain with `verify` parameters.
fn ringer_with(verify: VerifyParams, result: [u8; 32]) -> (Chain, u64, u64) {
    ringer_order(verify, &[10], &[result])
}

/// A ringer committed by verifier 30 at 1 for poster client 2, whose order at 2 is won by
/// `bidders`, which return `results` at 6; audits off.
fn ringer_order(verify: VerifyParams, bidders: &[u8], results: &[[u8; 32]]) -> (Chain, u64, u64) {
    let no_audits = AuctionParams {
        audit_min_ppm: 0,
        audit_max_ppm: 0,
        ..auction_params()
    };
    let mut chain = Chain::with(no_audits, verify, &VERIFIERS);
    let c = challenge_commitment(&addr(2), &[5; 32], &[8; 32]);
    chain
        .exec(
            1,
            30,
            VerifyMsg::CommitChallenge(MsgCommitChallenge { commitment: c }),
        )
        .unwrap();
    chain.end_block(1);
    let order = chain.cleared_order(2, 2, bidders);
    chain.deliver(6, order, results);
    (chain, 0, order)
}

fn reveal(challenge_id: u64, order_id: u64, salt: u8) -> VerifyMsg {
    VerifyMsg::RevealChallenge(MsgRevealChallenge {
        challenge_id,
        order_id,
        expected_output_hash: [5; 32],
        salt: [salt; 32],
    })
}

#[test]
fn a_ringer_answered_correctly_is_a_passed_challenge_the_pool_does_not_pay_for() {
    let (mut chain, id, order) = ringer([5; 32]);
    let lease = chain.state.leases_of_order(order)[0].id;
    assert_eq!(
        chain.state.lease(lease).unwrap().state,
        LeaseState::Accepted
    );
    assert_eq!(
        chain.exec(7, 30, reveal(9, order, 8)),
        Err(VerifyError::UnknownChallenge(9))
    );
    assert_eq!(
        chain.exec(7, 31, reveal(id, order, 8)),
        Err(VerifyError::NotChallengeOwner(addr(31)))
    );
    assert_eq!(
        chain.exec(7, 30, reveal(id, 99, 8)),
        Err(VerifyError::UnknownOrder(99))
    );
    assert_eq!(
        chain.exec(7, 30, reveal(id, order, 7)),
        Err(VerifyError::ChallengeMismatch)
    );
    let verifier = chain.balance(&addr(30));
    let pool = chain.balance(&verification_pool());
    chain.exec(7, 30, reveal(id, order, 8)).unwrap();
    assert_eq!(chain.state.reputation(&addr(10)).challenges_passed, 1);
    // A passed ringer is paid for by its poster, like any order: the pool pays nothing, so
    // one owner of a verifier, a poster and a provider cannot pump it.
    assert_eq!(chain.balance(&addr(30)), verifier);
    assert_eq!(chain.balance(&verification_pool()), pool);
    assert!(chain.state.challenge(id).is_none());
    assert_eq!(chain.state.verifier(&addr(30)).unwrap().open_challenges, 0);
    let e = chain.events_of("verify.challenge_revealed")[0].clone();
    assert_eq!((e.get("passed"), e.get("failed")), (Some("1"), Some("0")));
    // The order cannot be used again.
    let c = challenge_commitment(&addr(2), &[5; 32], &[8; 32]);
    chain
        .exec(
            8,
            30,
            VerifyMsg::CommitChallenge(MsgCommitChallenge { commitment: c }),
        )
        .unwrap();
    assert_eq!(
        chain.exec(8, 30, reveal(1, order, 8)),
        Err(VerifyError::OrderAlreadyChallenged(order))
    );
    // The poster fetched its answer, like any client.
    chain.auction(
        8,
        2,
        gpuchain_auction::AuctionMsg::ConfirmReceipt(gpuchain_auction::MsgConfirmReceipt {
            lease_id: lease,
        }),
    );
    chain.run_to(7, 12);
    assert_eq!(chain.state.lease(lease).unwrap().state, LeaseState::Paid);
}

#[test]
fn a_ringer_answered_wrongly_is_the_verifiers_faulty_verdict_and_slashes_after_the_window() {
    let (mut chain, id, order) = ringer([6; 32]);
    let lease = chain.state.leases_of_order(order)[0].id;
    chain.exec(7, 30, reveal(id, order, 8)).unwrap();
    let case = chain.state.case(lease).unwrap();
    assert_eq!(case.stage, CaseStage::AppealWindow);
    assert_eq!(case.challenge_id, Some(id));
    assert_eq!(case.verdicts[0].verdict, VerdictKind::Faulty);
    let posted = chain.events_of("verify.verdict");
    assert_eq!(
        posted.len(),
        1,
        "posted like any first verdict, so it can be appealed"
    );
    assert_eq!(posted[0].get("verdict"), Some("faulty"));
    assert_eq!(posted[0].get("round"), Some("0"));
    assert_eq!(
        chain.state.lease(lease).unwrap().payout_height,
        Some(11),
        "payout held past the appeal window"
    );
    chain.run_to(7, 10);
    assert_eq!(chain.state.lease(lease).unwrap().state, LeaseState::Faulted);
    let slash = &chain.state.slash_records_of(&addr(10))[0];
    assert_eq!(slash.prover, Some(addr(30)));
    assert_eq!(chain.state.verifier(&addr(30)).unwrap().open_cases, 0);
}

#[test]
fn ringer_reveals_that_prove_nothing_are_refused() {
    // Not judged yet: the provider has not revealed.
    let no_audits = AuctionParams {
        audit_min_ppm: 0,
        audit_max_ppm: 0,
        ..auction_params()
    };
    let mut chain = Chain::with(no_audits, verify_params(), &VERIFIERS);
    let c = challenge_commitment(&addr(2), &[5; 32], &[8; 32]);
    let commit = VerifyMsg::CommitChallenge(MsgCommitChallenge { commitment: c });
    chain.exec(1, 30, commit.clone()).unwrap();
    chain.exec(1, 30, commit.clone()).unwrap();
    assert_eq!(
        chain.exec(1, 30, commit.clone()),
        Err(VerifyError::TooManyChallenges(2))
    );
    assert_eq!(
        chain.exec(1, NEWCOMER, commit.clone()),
        Err(VerifyError::NotAVerifier(addr(NEWCOMER)))
    );
    let order = chain.cleared_order(1, 2, &[10]);
    assert_eq!(
        chain.exec(5, 30, reveal(0, order, 8)),
        Err(VerifyError::ChallengeNotBeforeOrder {
            committed: 1,
            posted: 1
        })
    );
    let order2 = chain.cleared_order(5, 2, &[11]);
    assert_eq!(
        chain.exec(9, 30, reveal(0, order2, 8)),
        Err(VerifyError::OrderNotJudged(order2))
    );
    // Expiry frees the slot.
    chain.run_to(9, 51);
    assert_eq!(chain.state.verifier(&addr(30)).unwrap().open_challenges, 0);
    assert_eq!(chain.events_of("verify.challenge_expired").len(), 2);
}

#[test]
fn a_jailed_verifier_cannot_commit_challenges_or_be_drawn() {
    let mut chain = Chain::new();
    let (lease, first) = audited(&mut chain);
    chain.run_to(6, 10);
    let c = VerifyMsg::CommitChallenge(MsgCommitChallenge {
        commitment: [0; 32],
    });
    assert_eq!(
        chain.exec(11, first, c),
        Err(VerifyError::VerifierJailed {
            verifier: addr(first),
            until: 30
        })
    );
    assert!(!chain
        .state
        .eligible_verifiers(11)
        .iter()
        .any(|v| v.operator == addr(first)));
    let _ = lease;
}

#[test]
fn unbonding_below_the_minimum_waits_for_open_cases() {
    let mut chain = Chain::new();
    let (_lease, v) = audited(&mut chain);
    assert_eq!(
        chain.exec(
            6,
            v,
            VerifyMsg::UnbondVerifier(MsgUnbondVerifier { amount: 150 * GPU })
        ),
        Err(VerifyError::UnbondWithOpenCases {
            remaining: 50 * GPU,
            min: 100 * GPU,
            open_cases: 1
        })
    );
    chain
        .exec(
            6,
            v,
            VerifyMsg::UnbondVerifier(MsgUnbondVerifier { amount: 100 * GPU }),
        )
        .unwrap();
}

#[test]
fn error_codes_are_distinct_and_in_the_verify_range() {
    let a = addr(1);
    let all = [
        VerifyError::ZeroAmount,
        VerifyError::InsufficientFunds {
            address: a,
            available: 0,
            required: 1,
        },
        VerifyError::BelowMinStake { bond: 0, min: 1 },
        VerifyError::VerifierExists(a),
        VerifyError::NotAVerifier(a),
        VerifyError::InsufficientBond {
            bonded: 0,
            requested: 1,
        },
        VerifyError::UnbondWithOpenCases {
            remaining: 0,
            min: 1,
            open_cases: 1,
        },
        VerifyError::NoCase(0),
        VerifyError::NotAssigned {
            lease_id: 0,
            signer: a,
        },
        VerifyError::VerdictTooLate {
            deadline: 0,
            height: 1,
        },
        VerifyError::NotAwaitingVerdict(0),
        VerifyError::NotAppealable(0),
        VerifyError::AppealWindowClosed { end: 0 },
        VerifyError::NotAppellant(a),
        VerifyError::NoVerifierAvailable(0),
        VerifyError::VerifierJailed {
            verifier: a,
            until: 1,
        },
        VerifyError::TooManyChallenges(1),
        VerifyError::UnknownChallenge(0),
        VerifyError::NotChallengeOwner(a),
        VerifyError::ChallengeMismatch,
        VerifyError::ChallengeNotBeforeOrder {
            committed: 1,
            posted: 1,
        },
        VerifyError::UnknownOrder(0),
        VerifyError::OrderNotJudged(0),
        VerifyError::OrderAlreadyChallenged(0),
        VerifyError::Overflow,
        VerifyError::InvalidParams(String::new()),
        VerifyError::Bank(gpuchain_bank::BankError::ZeroAmount),
        VerifyError::Auction(gpuchain_auction::AuctionError::Overflow),
        VerifyError::Reputation(gpuchain_reputation::ReputationError::Overflow),
    ];
    let mut codes: Vec<u32> = all.iter().map(|e| e.code()).collect();
    assert_eq!(codes, (101..=129).collect::<Vec<u32>>());
    codes.dedup();
    assert!(all.iter().all(|e| e.codespace() == "verify"));
    let _ = MemState::new();
}

#[test]
fn the_pool_pays_at_most_its_outflow_cap_per_block_and_owes_the_rest_in_order() {
    let mut chain = Chain::with(
        auction_params(),
        VerifyParams {
            max_pool_outflow_ppm: 2_000,
            ..verify_params()
        },
        &VERIFIERS,
    );
    let (lease, v) = audited(&mut chain);
    let before = chain.balance(&addr(v));
    chain
        .exec(6, v, verdict(lease, VerdictKind::Honest))
        .unwrap();
    chain.run_to(6, 9);
    assert_eq!(
        chain.state.case(lease).unwrap().outcome,
        CaseOutcome::Settled(VerdictKind::Honest)
    );
    let owed = chain.state.owed_fees();
    assert_eq!(owed.len(), 1, "the fee is over this block's cap");
    let first = chain.balance(&addr(v)) - before;
    assert!(first > 0 && first < GPU / 2, "paid {first} now");
    assert_eq!(owed[0].amount, GPU / 2 - first);
    assert_eq!(chain.events_of("verify.audit_fee_owed").len(), 1);
    // Each later block pays at most 0.2% of what the pool held, oldest debt first, until the
    // whole fee is paid.
    let mut h = 10;
    while !chain.state.owed_fees().is_empty() {
        let got = chain.balance(&addr(v));
        chain.end_block(h);
        let paid = chain.balance(&addr(v)) - got;
        // What the pool held when its payouts began: after this block's inflows.
        let pool = chain.balance(&verification_pool()) + paid;
        assert!(paid > 0, "h{h}: the debt is paid down");
        assert!(
            paid <= pool / 500 + 1,
            "h{h}: {paid} over the cap of {pool}"
        );
        h += 1;
        assert!(h < 100, "the debt is never paid");
    }
    assert_eq!(chain.balance(&addr(v)), before + GPU / 2, "paid in full");
    let bad = VerifyParams {
        max_pool_outflow_ppm: 0,
        ..verify_params()
    };
    assert!(bad.validate().is_err(), "a cap of zero would never pay");
}

/// A k = 2 ringer whose two replicas (providers 10 and 11) returned the same bytes, which
/// verifier 30's ringer calls wrong: its reveal at 7 opens a faulty case on each. Provider 10
/// lets its verdict stand; provider 11 appeals on the last height of the window (10), and the
/// end-block of 10 faults 10's lease but spares 11's, whose own appeal decides it. Returns
/// the chain, 11's lease and the verifier drawn for its appeal.
fn twin_faulted_while_appealing() -> (Chain, u64, u8) {
    let (mut chain, _, order) = ringer_order(verify_params(), &[10, 11], &[[6; 32], [6; 32]]);
    let leases: Vec<u64> = chain
        .state
        .leases_of_order(order)
        .iter()
        .map(|l| l.id)
        .collect();
    let twin = *leases
        .iter()
        .find(|l| chain.state.lease(**l).unwrap().provider == addr(11))
        .unwrap();
    chain.exec(7, 30, reveal(0, order, 8)).unwrap();
    chain.run_to(7, 9);
    chain
        .exec(10, 11, VerifyMsg::Appeal(MsgAppeal { lease_id: twin }))
        .unwrap();
    chain.end_block(10);
    for l in &leases {
        let expected = if *l == twin {
            LeaseState::Accepted
        } else {
            LeaseState::Faulted
        };
        assert_eq!(chain.state.lease(*l).unwrap().state, expected);
    }
    let case = chain.state.case(twin).unwrap();
    assert_eq!((case.round, case.stage), (1, CaseStage::AwaitingVerdict));
    (chain, twin, seed(&case.assignee.unwrap()))
}

#[test]
fn a_replica_appealing_its_own_ringer_case_is_judged_by_it_not_by_its_twins_verdict() {
    // The appeal's verifier disagrees with the ringer: a tie-breaker is drawn, and the two
    // overturn the ringer. (When the twin's verdict still faulted the appealing replica, this
    // round failed to hold its ended lease and the missed deadline halted the chain; then it
    // let one owner of a ringer and a replica get an honest replica slashed.)
    let (mut chain, twin, r1) = twin_faulted_while_appealing();
    let pool = chain.balance(&verification_pool());
    chain
        .exec(11, r1, verdict(twin, VerdictKind::Honest))
        .unwrap();
    let case = chain.state.case(twin).unwrap();
    assert_eq!(case.round, 2);
    let r2 = seed(&case.assignee.unwrap());
    chain
        .exec(12, r2, verdict(twin, VerdictKind::Honest))
        .unwrap();
    chain.run_to(11, 20);
    let case = chain.state.case(twin).unwrap();
    assert_eq!(case.outcome, CaseOutcome::Settled(VerdictKind::Honest));
    assert_eq!(
        chain.state.verifier(&addr(30)).unwrap().overturned,
        1,
        "the ringer's owner is slashed for the verdict that did not stand"
    );
    assert!(
        chain.state.slash_records_of(&addr(11)).is_empty(),
        "the honest replica is never slashed"
    );
    assert_ne!(chain.state.lease(twin).unwrap().state, LeaseState::Faulted);
    // The jurors are paid out of the ringer owner's slash: the pool loses nothing.
    assert!(chain.balance(&verification_pool()) >= pool);

    // The appeal's verifier stays silent: its round is reassigned, and a verdict that
    // confirms the ringer faults the replica through its own case.
    let (mut chain, twin, r1) = twin_faulted_while_appealing();
    chain.run_to(11, 15);
    let case = chain.state.case(twin).unwrap();
    assert!(case.reassigned);
    assert_eq!(chain.state.verifier(&addr(r1)).unwrap().misses, 1);
    let again = seed(&case.assignee.unwrap());
    chain
        .exec(16, again, verdict(twin, VerdictKind::Faulty))
        .unwrap();
    chain.run_to(16, 30);
    let case = chain.state.case(twin).unwrap();
    assert_eq!(case.outcome, CaseOutcome::Settled(VerdictKind::Faulty));
    assert_eq!(chain.state.lease(twin).unwrap().state, LeaseState::Faulted);
}

#[test]
fn an_overturned_ringer_pays_its_jurors_out_of_its_owners_slash_not_the_pool() {
    // Verifier 30's ringer says provider 10's answer is wrong; 10 appeals and two verifiers
    // agree with it. The lease paid the pool only an audit's chance of a fee (none here:
    // audits are off), so a full fee from the pool would let an owner of verifiers drain it
    // with false ringers against its own providers. A slash of 0.1% of 200 GPU (0.2 GPU,
    // half to the appellant) is less than the 0.5 GPU lease's audit fee.
    let small_slash = VerifyParams {
        verifier_wrong_slash_ppm: 1_000,
        ..verify_params()
    };
    let (mut chain, id, order) = ringer_with(small_slash, [6; 32]);
    let lease = chain.state.leases_of_order(order)[0].id;
    let pool = chain.balance(&verification_pool());
    chain.exec(7, 30, reveal(id, order, 8)).unwrap();
    chain
        .exec(8, 10, VerifyMsg::Appeal(MsgAppeal { lease_id: lease }))
        .unwrap();
    let r1 = seed(&chain.state.case(lease).unwrap().assignee.unwrap());
    chain
        .exec(9, r1, verdict(lease, VerdictKind::Honest))
        .unwrap();
    let r2 = seed(&chain.state.case(lease).unwrap().assignee.unwrap());
    let (before_1, before_2) = (chain.balance(&addr(r1)), chain.balance(&addr(r2)));
    chain
        .exec(10, r2, verdict(lease, VerdictKind::Honest))
        .unwrap();
    let case = chain.state.case(lease).unwrap();
    assert_eq!(case.outcome, CaseOutcome::Settled(VerdictKind::Honest));
    let paid = chain.balance(&addr(r1)) - before_1 + chain.balance(&addr(r2)) - before_2;
    assert_eq!(
        paid,
        GPU / 10,
        "the slash's half that went to the pool, all of it"
    );
    assert_eq!(chain.balance(&verification_pool()), pool);
    assert_eq!(
        chain.state.lease(lease).unwrap().state,
        LeaseState::Accepted
    );
}
