//! A verifier that cannot check a case steps down: from the side of the verifiers a cheat
//! would like jailed, and of the cheat that would like its case to go unjudged.

use gpuchain_auction::{AuctionRead, LeaseState};

use super::tests::{audited, seed, verdict};
use crate::test_utils::*;
use crate::{
    CaseOutcome, CaseStage, MsgRecuse, VerdictKind, VerifyError, VerifyMsg, VerifyParams,
    VerifyRead,
};

fn recuse(lease_id: u64) -> VerifyMsg {
    VerifyMsg::Recuse(MsgRecuse { lease_id })
}

#[test]
fn a_verifier_that_cannot_check_steps_down_unslashed_and_another_judges() {
    let mut chain = Chain::new();
    let (lease, first) = audited(&mut chain);
    let other = *VERIFIERS.iter().find(|v| **v != first).unwrap();
    assert_eq!(
        chain.exec(6, other, recuse(lease)),
        Err(VerifyError::NotAssigned {
            lease_id: lease,
            signer: addr(other)
        }),
        "only the assigned verifier steps down"
    );
    let bond = chain.state.verifier(&addr(first)).unwrap().bonded;
    chain.exec(6, first, recuse(lease)).unwrap();
    let record = chain.state.verifier(&addr(first)).unwrap();
    assert_eq!(
        (
            record.bonded,
            record.misses,
            record.open_cases,
            record.jailed_until
        ),
        (bond, 0, 0, 0)
    );
    let case = chain.state.case(lease).unwrap();
    let second = seed(&case.assignee.unwrap());
    assert_ne!(second, first);
    assert!(
        !case.reassigned,
        "a recusal is not the round's reassignment"
    );
    assert_eq!(chain.events_of("verify.recused").len(), 1);
    chain
        .exec(7, second, verdict(lease, VerdictKind::Honest))
        .unwrap();
    assert_eq!(chain.state.case(lease).unwrap().verdicts.len(), 1);
}

#[test]
fn a_recusal_after_the_deadline_or_twice_is_refused() {
    let mut chain = Chain::new();
    let (lease, first) = audited(&mut chain);
    let deadline = chain.state.case(lease).unwrap().deadline_height;
    assert_eq!(
        chain.exec(deadline + 1, first, recuse(lease)),
        Err(VerifyError::VerdictTooLate {
            deadline,
            height: deadline + 1
        })
    );
    chain.exec(6, first, recuse(lease)).unwrap();
    assert!(matches!(
        chain.exec(6, first, recuse(lease)),
        Err(VerifyError::NotAssigned { .. })
    ));
}

#[test]
fn when_every_verifier_steps_down_the_case_waits_then_the_fallback_applies() {
    // Nobody jailed, and nobody drawn twice: the case ends as when a miss cannot be
    // reassigned, and with no wait left the auction's fallback accepts the result.
    let no_wait = VerifyParams {
        max_verdict_wait_blocks: 0,
        ..verify_params()
    };
    let mut chain = Chain::with(auction_params(), no_wait, &VERIFIERS);
    let (lease, _) = audited(&mut chain);
    let mut drawn = Vec::new();
    while let Some(v) = chain.state.case(lease).and_then(|c| c.assignee) {
        assert!(
            !drawn.contains(&v),
            "a verifier that stepped down is never drawn again"
        );
        drawn.push(v);
        chain.exec(6, seed(&v), recuse(lease)).unwrap();
    }
    assert_eq!(drawn.len(), VERIFIERS.len());
    let case = chain.state.case(lease).unwrap();
    assert_eq!(
        (case.stage, case.outcome),
        (CaseStage::Closed, CaseOutcome::NoVerdict)
    );
    chain.run_to(6, 16);
    assert_eq!(
        chain.state.lease(lease).unwrap().state,
        LeaseState::Accepted
    );
    assert!(chain.events_of("verify.verifier_slashed").is_empty());
    for v in VERIFIERS {
        assert_eq!(chain.state.verifier(&addr(v)).unwrap().jailed_until, 0);
    }
}
