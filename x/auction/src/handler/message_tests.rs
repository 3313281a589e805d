//! The auction's messages: each bad one fails with its own error code and changes nothing,
//! copied reveals and late commits fail, and message bodies round-trip through the JSON the
//! CLI reads.

use gpuchain_slashing::{slash_provider, FaultKind};
use gpuchain_types::{ModuleError, Overlay};

use crate::test_utils::*;
use crate::{
    AuctionError, AuctionMsg, AuctionParams, AuctionRead, LeaseState, MsgBid, MsgCancelOrder,
    MsgRevealResult, MsgWithdrawRewards, OrderState,
};

use super::test_steps::*;

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
