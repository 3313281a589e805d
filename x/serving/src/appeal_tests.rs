//! Appeals of standing verdicts, each from the side of whoever could profit by breaking them:
//! a jury that waves a cheat through, a jury that fakes a fault for the client, a client
//! that appeals only to delay payment, and anyone appealing what is not theirs to appeal.

use gpuchain_slashing::SlashingRead;
use gpuchain_staking::StakingRead;
use gpuchain_types::{Ppm, TypedEvent};
use gpuchain_verify::VerifyRead;

use crate::test_utils::*;
use crate::tests::{assignee, claim, params, reveal, serving_with, verdict};
use crate::*;

const WINDOW: u64 = 10;
const DEPOSIT: u128 = 10 * GPU;

/// Every claim audited, verdicts open to appeal for [`WINDOW`] blocks at [`DEPOSIT`].
fn appeal_params(second_opinion_ppm: Ppm) -> ServingParams {
    ServingParams {
        appeal_window_blocks: WINDOW,
        appeal_deposit: DEPOSIT,
        second_opinion_ppm,
        ..params(1_000_000)
    }
}

/// A claim of two receipts by provider 10 at height 5, revealed at 6. Returns the chain, the
/// lease and the claim as posted.
fn revealed() -> (Chain, ServingLease, Claim) {
    let (mut chain, a, _) = serving_with(appeal_params(0));
    claim(&mut chain, 5, 10, &receipts(a.id, 0, 2, 1_000)).unwrap();
    chain.end_block(5);
    let posted = chain.state.serving_claims().pop().unwrap();
    reveal(&mut chain, 6, 10).unwrap();
    (chain, a, posted)
}

fn appeal(chain: &mut Chain, height: u64, who: u8, claim_id: u64) -> Result<(), ServingError> {
    chain.exec(
        height,
        who,
        ServingMsg::Appeal(MsgAppealServing { claim_id }),
    )
}

fn pay(chain: &mut Chain, from: u8, to: u8, amount: u128) {
    let mut fork = gpuchain_types::Overlay::new(&chain.state);
    gpuchain_bank::BankWrite::transfer(&mut fork, &addr(from), &addr(to), amount).unwrap();
    let (writes, _) = fork.into_parts();
    chain.state.apply(writes);
}

fn stage(chain: &Chain) -> ClaimStage {
    chain.state.serving_claims().pop().unwrap().stage
}

fn verifier_bond(chain: &Chain, v: u8) -> u128 {
    chain.state.verifier(&addr(v)).unwrap().bonded
}

#[test]
fn an_unappealed_verdict_applies_when_the_window_closes_with_its_jurors_held_until_then() {
    let (mut chain, a, posted) = revealed();
    let p10 = chain.balance(10);
    let juror = assignee(&chain).unwrap();
    verdict(&mut chain, 6, true);
    assert!(matches!(
        stage(&chain),
        ClaimStage::Standing {
            honest: true,
            appeal_deadline: 16,
            ..
        }
    ));
    assert!(chain
        .events
        .iter()
        .any(|e| ServingVerdictStandsEvent::from_event(e).is_some()));
    chain.run(6, 15);
    assert_eq!(chain.balance(10), p10, "nothing paid inside the window");
    assert_eq!(
        chain.state.verifier(&addr(juror)).unwrap().open_cases,
        1,
        "the juror's bond stays answerable while its verdict can be overturned"
    );
    chain.end_block(16);
    assert!(chain.state.serving_claims().is_empty());
    assert_eq!(chain.balance(10), p10 + posted.amount);
    assert_eq!(chain.state.verifier(&addr(juror)).unwrap().open_cases, 0);
    assert_eq!(chain.state.serving_lease(a.id).unwrap().paid, posted.amount);
}

#[test]
fn a_waved_through_cheat_is_caught_on_the_clients_appeal_and_its_juror_slashed() {
    let (mut chain, a, posted) = revealed();
    let bond = chain.state.provider(&addr(10)).unwrap().bonded;
    let client = chain.balance(CLIENT);
    let p10 = chain.balance(10);
    // The first juror waves the cheat through.
    let stamp = assignee(&chain).unwrap();
    let stamp_bond = verifier_bond(&chain, stamp);
    verdict(&mut chain, 6, true);
    appeal(&mut chain, 7, CLIENT, posted.id).unwrap();
    assert_eq!(chain.balance(CLIENT), client - DEPOSIT);
    let ClaimStage::Judging(j) = stage(&chain) else {
        panic!("the appeal draws a fresh jury")
    };
    assert!(j.verdicts.is_empty() && j.appeal.as_ref().unwrap().first_verdicts.len() == 1);
    let first = assignee(&chain).unwrap();
    assert_ne!(first, stamp, "nobody of the first jury judges the appeal");
    verdict(&mut chain, 7, false);
    let second = assignee(&chain).unwrap();
    assert!(second != stamp && second != first);
    verdict(&mut chain, 8, false);
    chain.end_block(8);

    assert!(chain.state.serving_claims().is_empty());
    assert_eq!(chain.balance(10), p10, "the cheat is not paid");
    assert_eq!(
        chain.state.provider(&addr(10)).unwrap().bonded,
        bond - bond * 3 / 10,
        "the cheat is slashed"
    );
    assert!(
        verifier_bond(&chain, stamp) < stamp_bond,
        "the overturned juror is slashed"
    );
    assert!(
        chain.balance(CLIENT) > client + posted.amount + posted.audit_reserve,
        "the client has its deposit, the claim and its reserve back, and a share of slashes"
    );
    assert_eq!(
        chain.state.serving_lease(a.id).unwrap().state,
        ServingLeaseState::Dropped
    );
    for v in VERIFIERS {
        assert_eq!(chain.state.verifier(&addr(v)).unwrap().open_cases, 0);
    }
}

#[test]
fn a_provider_overturns_a_fault_two_jurors_faked_for_the_client() {
    let (mut chain, a, posted) = revealed();
    let bond = chain.state.provider(&addr(10)).unwrap().bonded;
    let p10 = chain.balance(10);
    let liar1 = assignee(&chain).unwrap();
    verdict(&mut chain, 6, false);
    let liar2 = assignee(&chain).unwrap();
    verdict(&mut chain, 7, false);
    let (b1, b2) = (verifier_bond(&chain, liar1), verifier_bond(&chain, liar2));
    assert!(matches!(
        stage(&chain),
        ClaimStage::Standing { honest: false, .. }
    ));
    assert_eq!(
        chain.state.provider(&addr(10)).unwrap().bonded,
        bond,
        "no slash while the verdict can be appealed"
    );
    appeal(&mut chain, 8, 10, posted.id).unwrap();
    verdict(&mut chain, 8, true);
    verdict(&mut chain, 9, true);
    chain.end_block(9);

    assert!(chain.state.serving_claims().is_empty());
    assert_eq!(chain.state.provider(&addr(10)).unwrap().bonded, bond);
    assert!(
        chain.balance(10) >= p10 + posted.amount,
        "paid the claim, its deposit back, and compensated from the liars' slashes"
    );
    assert!(verifier_bond(&chain, liar1) < b1 && verifier_bond(&chain, liar2) < b2);
    assert_eq!(
        chain.state.serving_lease(a.id).unwrap().state,
        ServingLeaseState::Serving
    );
    assert!(chain
        .state
        .slash_records()
        .iter()
        .all(|r| r.subject != addr(10)));
}

#[test]
fn an_appeal_that_fails_costs_the_appellant_its_deposit_and_pays_the_appeal_jury() {
    let (mut chain, _, posted) = revealed();
    let client = chain.balance(CLIENT);
    let p10 = chain.balance(10);
    let judge = assignee(&chain).unwrap();
    verdict(&mut chain, 6, true);
    appeal(&mut chain, 7, CLIENT, posted.id).unwrap();
    let first = assignee(&chain).unwrap();
    let f1 = chain.balance(first);
    verdict(&mut chain, 7, true);
    let second = assignee(&chain).unwrap();
    let f2 = chain.balance(second);
    verdict(&mut chain, 8, true);
    chain.end_block(8);

    assert!(chain.state.serving_claims().is_empty());
    assert_eq!(
        chain.balance(10),
        p10 + posted.amount,
        "the honest provider is paid"
    );
    assert_eq!(
        chain.balance(CLIENT),
        client - DEPOSIT,
        "the deposit is lost"
    );
    // The reserve is shared by the three who judged honest, the deposit by the appeal jury.
    let reserve_share = posted.audit_reserve / 3;
    assert_eq!(chain.balance(first), f1 + DEPOSIT / 2 + reserve_share);
    assert_eq!(chain.balance(second), f2 + DEPOSIT / 2 + reserve_share);
    assert!(chain.state.slash_records().is_empty(), "nobody was wrong");
    assert!(chain.state.verifier(&addr(judge)).unwrap().open_cases == 0);
}

#[test]
fn an_appeal_without_a_full_fresh_jury_leaves_the_first_verdict_and_returns_the_deposit() {
    let (mut chain, _, posted) = revealed();
    let client = chain.balance(CLIENT);
    // Three first jurors (the first two disagree): one verifier is left for the appeal.
    verdict(&mut chain, 6, false);
    verdict(&mut chain, 7, true);
    verdict(&mut chain, 8, true);
    appeal(&mut chain, 9, CLIENT, posted.id).unwrap();
    let last = assignee(&chain).unwrap();
    let last_bond = verifier_bond(&chain, last);
    verdict(&mut chain, 9, false);
    chain.end_block(9);
    assert!(chain.state.serving_claims().is_empty());
    assert_eq!(
        chain.balance(CLIENT),
        client,
        "the deposit is back, the claim paid"
    );
    assert_eq!(
        verifier_bond(&chain, last),
        last_bond,
        "a lone appeal verdict is no verdict: nobody slashed for it"
    );
    for v in VERIFIERS {
        assert_eq!(chain.state.verifier(&addr(v)).unwrap().open_cases, 0);
    }
}

#[test]
fn only_the_party_a_verdict_goes_against_may_appeal_once_within_the_window() {
    let (mut chain, _, posted) = revealed();
    // Nothing stands yet.
    assert_eq!(
        appeal(&mut chain, 6, CLIENT, posted.id),
        Err(ServingError::NotAppealable(posted.id))
    );
    assert_eq!(
        appeal(&mut chain, 6, CLIENT, 999),
        Err(ServingError::UnknownClaim(999))
    );
    verdict(&mut chain, 6, true);
    // An honest verdict: not the provider's to appeal, nor a stranger's.
    for who in [10, OTHER_CLIENT, 30] {
        assert!(matches!(
            appeal(&mut chain, 7, who, posted.id),
            Err(ServingError::NotAllowed { .. })
        ));
    }
    // A client that spent all but less than the deposit.
    let spent = chain.balance(CLIENT) - (DEPOSIT - 1);
    pay(&mut chain, CLIENT, VALIDATOR, spent);
    assert!(matches!(
        appeal(&mut chain, 7, CLIENT, posted.id),
        Err(ServingError::Bank(_))
    ));
    pay(&mut chain, VALIDATOR, CLIENT, spent);
    appeal(&mut chain, 7, CLIENT, posted.id).unwrap();
    assert_eq!(
        appeal(&mut chain, 7, CLIENT, posted.id),
        Err(ServingError::NotAppealable(posted.id)),
        "one appeal per claim"
    );
    // After the window: nothing left to appeal.
    let (mut late, _, posted) = revealed();
    verdict(&mut late, 6, true);
    assert_eq!(
        appeal(&mut late, 17, CLIENT, posted.id),
        Err(ServingError::NotAppealable(posted.id))
    );
    late.run(6, 16);
    assert_eq!(
        appeal(&mut late, 17, CLIENT, posted.id),
        Err(ServingError::UnknownClaim(posted.id))
    );
}

#[test]
fn appeals_need_a_deposit_when_the_window_is_open() {
    let mut p = appeal_params(0);
    p.appeal_deposit = 0;
    assert!(matches!(p.validate(), Err(ServingError::InvalidParams(_))));
    p.appeal_window_blocks = 0;
    assert_eq!(p.validate(), Ok(()));
}
