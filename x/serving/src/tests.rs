//! The module's rules, each from the side of whoever could profit by breaking it.

use gpuchain_slashing::SlashingRead;
use gpuchain_staking::StakingRead;
use gpuchain_verify::VerifyRead;

use crate::receipt::merkle_proof;
use crate::test_utils::*;
use crate::*;

/// Every parameter as default but the audit chance, without second opinions and with
/// verdicts applied at once (appeals are tested in `appeal_tests`).
pub(crate) fn params(audit_ppm: Ppm) -> ServingParams {
    ServingParams {
        audit_ppm,
        second_opinion_ppm: 0,
        appeal_window_blocks: 0,
        ..ServingParams::default()
    }
}

use gpuchain_types::Ppm;

/// An order opened at height 1 by [`CLIENT`], bids by providers 10 (price 1 GPU), 11 (1.5 GPU)
/// and 12 (1.8 GPU), cleared in the end-block of 3. Returns the chain and the two leases.
pub(crate) fn serving_with(params: ServingParams) -> (Chain, ServingLease, ServingLease) {
    serving_after(params, |_| {})
}

/// [`serving_with`], `setup` run on the chain before the order opens.
pub(crate) fn serving_after(
    params: ServingParams,
    setup: impl FnOnce(&mut Chain),
) -> (Chain, ServingLease, ServingLease) {
    let mut chain = Chain::new(params);
    setup(&mut chain);
    chain.exec(1, CLIENT, ServingMsg::Open(open_msg())).unwrap();
    chain.end_block(1);
    for (p, price) in [(10, GPU), (11, 3 * GPU / 2), (12, 9 * GPU / 5)] {
        chain
            .exec(2, p, ServingMsg::Bid(bid_msg(1, price)))
            .unwrap();
    }
    chain.run(2, 3);
    let order = chain.state.serving_order(1).unwrap();
    let leases: Vec<ServingLease> = order
        .leases
        .iter()
        .map(|id| chain.state.serving_lease(*id).unwrap())
        .collect();
    let [a, b] = leases.try_into().unwrap();
    (chain, a, b)
}

fn serving(audit_ppm: Ppm) -> (Chain, ServingLease, ServingLease) {
    serving_with(params(audit_ppm))
}

pub(crate) fn claim(
    chain: &mut Chain,
    height: u64,
    provider: u8,
    rs: &[receipt::Receipt],
) -> Result<(), ServingError> {
    chain.exec(height, provider, ServingMsg::Claim(claim_msg(rs, CLIENT)))
}

#[test]
fn the_lowest_bids_win_at_one_uniform_price_and_each_winner_gets_a_lease() {
    let (chain, a, b) = serving(50_000);
    let order = chain.state.serving_order(1).unwrap();
    assert_eq!(order.state, ServingOrderState::Serving);
    assert_eq!(order.price, 3 * GPU / 2, "the highest winning bid");
    assert_eq!((a.provider, b.provider), (addr(10), addr(11)));
    assert_eq!((a.price, b.price), (order.price, order.price));
    assert_eq!(order.end_height, 103);
    assert!(
        chain.state.serving_bids(1).is_empty(),
        "bids are deleted at clearing"
    );
    assert_eq!(chain.state.open_leases(&addr(10)), 1);
    assert_eq!(chain.state.open_leases(&addr(12)), 0);
    assert_eq!(chain.state.serving_leases_of(&addr(11)), vec![b.clone()]);
    assert_eq!(
        (a.endpoint.as_str(), b.endpoint.as_str()),
        ("http://127.0.0.1:8081", "http://127.0.0.1:8081"),
        "each lease keeps where its provider said it answers"
    );
}

#[test]
fn a_bid_without_a_usable_endpoint_is_refused_and_changes_nothing() {
    let mut chain = Chain::new(params(50_000));
    chain.exec(1, CLIENT, ServingMsg::Open(open_msg())).unwrap();
    let long = format!("http://{}", "a".repeat(MAX_ENDPOINT_BYTES));
    for endpoint in [
        "",
        "127.0.0.1:8081",
        "ftp://host:21",
        "http://",
        "http:///v1",
        "http://host:8081/ v1",
        "http://host\n:8081",
        long.as_str(),
    ] {
        let endpoint = endpoint.to_string();
        let msg = ServingMsg::Bid(MsgBidServing {
            order_id: 1,
            price: GPU,
            endpoint: endpoint.clone(),
        });
        let before = chain.state.serving_bids(1);
        assert_eq!(
            handler::check_stateless(&msg, &chain.state.serving_params()),
            Err(ServingError::BadEndpoint(endpoint.clone())),
            "{endpoint:?} passes the stateless check"
        );
        assert_eq!(
            chain.exec(2, 10, msg),
            Err(ServingError::BadEndpoint(endpoint.clone())),
            "{endpoint:?}"
        );
        assert_eq!(chain.state.serving_bids(1), before);
    }
    for endpoint in ["http://10.0.0.2:8081", "https://serve.example.org/gpu/v1"] {
        let msg = ServingMsg::Bid(MsgBidServing {
            order_id: 1,
            price: GPU,
            endpoint: endpoint.into(),
        });
        assert_eq!(
            handler::check_stateless(&msg, &chain.state.serving_params()),
            Ok(())
        );
    }
}

#[test]
fn bids_from_the_client_above_the_ceiling_outside_the_region_or_late_are_refused() {
    let mut chain = Chain::new(params(50_000));
    let mut msg = open_msg();
    msg.region = Some("eu-west".into());
    chain.exec(1, CLIENT, ServingMsg::Open(msg)).unwrap();
    let bid = |price| ServingMsg::Bid(bid_msg(1, price));
    assert_eq!(chain.exec(2, CLIENT, bid(GPU)), Err(ServingError::SelfBid));
    assert!(matches!(
        chain.exec(2, 10, bid(3 * GPU)),
        Err(ServingError::PriceAboveMax { .. })
    ));
    assert_eq!(
        chain.exec(2, 12, bid(GPU)),
        Err(ServingError::WrongRegion(addr(12)))
    );
    assert_eq!(
        chain.exec(2, 30, bid(GPU)),
        Err(ServingError::NotEligible(addr(30)))
    );
    chain.exec(2, 10, bid(GPU)).unwrap();
    assert_eq!(
        chain.exec(2, 10, bid(GPU)),
        Err(ServingError::DuplicateBid(addr(10)))
    );
    assert!(matches!(
        chain.exec(4, 11, bid(GPU)),
        Err(ServingError::BidWindowClosed { .. })
    ));
}

#[test]
fn an_order_without_bids_is_refunded_in_full() {
    let mut chain = Chain::new(params(50_000));
    let before = chain.balance(CLIENT);
    chain.exec(1, CLIENT, ServingMsg::Open(open_msg())).unwrap();
    assert_eq!(chain.balance(CLIENT), before - 50 * GPU);
    chain.run(1, 3);
    assert_eq!(chain.balance(CLIENT), before);
    assert_eq!(
        chain.state.serving_order(1).unwrap().state,
        ServingOrderState::Closed
    );
}

#[test]
fn malformed_orders_get_clear_errors_and_change_nothing() {
    let mut chain = Chain::new(params(50_000));
    let mut cases = Vec::new();
    let mut m = open_msg();
    m.providers = 0;
    cases.push(m);
    let mut m = open_msg();
    m.providers = 9;
    cases.push(m);
    let mut m = open_msg();
    m.duration_blocks = 1;
    cases.push(m);
    let mut m = open_msg();
    m.bid_window_blocks = 0;
    cases.push(m);
    let mut m = open_msg();
    m.deposit = 1;
    cases.push(m);
    let mut m = open_msg();
    m.model.name = String::new();
    cases.push(m);
    let mut m = open_msg();
    m.model.name = "a\nb".into();
    cases.push(m);
    let mut m = open_msg();
    m.max_price = 0;
    cases.push(m);
    for m in cases {
        let err = chain.exec(1, CLIENT, ServingMsg::Open(m)).unwrap_err();
        assert!(
            matches!(err, ServingError::InvalidOrder(_) | ServingError::ZeroPrice),
            "{err}"
        );
    }
    let mut m = open_msg();
    m.deposit = 10_000 * GPU;
    assert!(matches!(
        chain.exec(1, CLIENT, ServingMsg::Open(m)),
        Err(ServingError::Bank(_))
    ));
    assert!(chain.state.serving_orders().is_empty());
}

#[test]
fn the_client_pays_exactly_for_the_acknowledged_units_and_gets_the_rest_back() {
    let (mut chain, a, b) = serving(50_000);
    let client_start = chain.balance(CLIENT) + 50 * GPU;
    let p10 = chain.balance(10);
    let p11 = chain.balance(11);
    // 3 requests of 1,000 tokens and then 2 of 500 on lease a; 7 of 123 on lease b.
    claim(&mut chain, 5, 10, &receipts(a.id, 0, 3, 1_000)).unwrap();
    claim(&mut chain, 5, 11, &receipts(b.id, 0, 7, 123)).unwrap();
    chain.end_block(5);
    claim(&mut chain, 6, 10, &receipts(a.id, 3, 2, 500)).unwrap();
    chain.end_block(6);
    let price = 3 * GPU / 2;
    let paid_a = 3_000 * price / 1_000_000 + 1_000 * price / 1_000_000;
    let paid_b = 861 * price / 1_000_000;
    assert_eq!(chain.balance(10), p10 + paid_a);
    assert_eq!(chain.balance(11), p11 + paid_b);
    let lease = chain.state.serving_lease(a.id).unwrap();
    assert_eq!(
        (lease.next_seq, lease.units, lease.paid),
        (5, 4_000, paid_a)
    );
    assert!(chain.state.serving_claims().is_empty());
    // The order serves through 103 and takes claims through its grace; then the rest returns.
    chain.run(7, 103 + 20);
    assert_eq!(chain.balance(CLIENT), client_start - paid_a - paid_b);
    assert_eq!(
        chain.state.serving_order(1).unwrap().state,
        ServingOrderState::Closed
    );
    assert_eq!(chain.state.open_leases(&addr(10)), 0);
    assert_eq!(
        claim(&mut chain, 124, 10, &receipts(a.id, 5, 1, 10)),
        Err(ServingError::LeaseClosed(a.id))
    );
    // Retention: an hour of block time after it closed (a block a second here), the order
    // and its leases leave state.
    chain.run(124, 123 + 3_599);
    assert!(chain.state.serving_order(1).is_some());
    chain.run(123 + 3_600, 123 + 3_600);
    assert!(chain.state.serving_order(1).is_none());
    assert!(chain.state.serving_lease(a.id).is_none());
    assert!(chain.state.serving_leases_of(&addr(10)).is_empty());
}

#[test]
fn forged_replayed_or_foreign_acknowledgements_pay_nothing() {
    let (mut chain, a, b) = serving(50_000);
    let rs = receipts(a.id, 0, 4, 1_000);
    // Signed by another account than the lease's client.
    let forged = claim_msg(&rs, OTHER_CLIENT);
    assert_eq!(
        chain.exec(5, 10, ServingMsg::Claim(forged)),
        Err(ServingError::BadAcknowledgement(a.id))
    );
    // The client's key, but the provider raised the units (or changed the root).
    let mut more = claim_msg(&rs, CLIENT);
    more.units += 1;
    assert_eq!(
        chain.exec(5, 10, ServingMsg::Claim(more)),
        Err(ServingError::BadAcknowledgement(a.id))
    );
    let mut other_root = claim_msg(&rs, CLIENT);
    other_root.root[0] ^= 1;
    assert_eq!(
        chain.exec(5, 10, ServingMsg::Claim(other_root)),
        Err(ServingError::BadAcknowledgement(a.id))
    );
    // An acknowledgement of lease a's batch claimed on lease b.
    let mut moved = claim_msg(&rs, CLIENT);
    moved.lease_id = b.id;
    assert_eq!(
        chain.exec(5, 11, ServingMsg::Claim(moved)),
        Err(ServingError::BadAcknowledgement(b.id))
    );
    // Another provider cannot claim a's batch.
    assert!(matches!(
        chain.exec(5, 11, ServingMsg::Claim(claim_msg(&rs, CLIENT))),
        Err(ServingError::NotAllowed { .. })
    ));
    // The real one pays once; replaying it, or any batch overlapping it, is refused.
    claim(&mut chain, 5, 10, &rs).unwrap();
    assert!(matches!(
        claim(&mut chain, 5, 10, &rs),
        Err(ServingError::WrongSequence { .. })
    ));
    assert!(matches!(
        claim(&mut chain, 5, 10, &receipts(a.id, 2, 4, 1_000)),
        Err(ServingError::WrongSequence { .. })
    ));
    // Skipping ahead is refused too: receipts are claimed in order.
    assert!(matches!(
        claim(&mut chain, 5, 10, &receipts(a.id, 5, 1, 1_000)),
        Err(ServingError::WrongSequence {
            expected: 4,
            got: 5,
            ..
        })
    ));
    chain.end_block(5);
}

#[test]
fn claims_never_exceed_the_deposit_or_what_the_bond_backs() {
    // Every claim audited: the bond backs up to 1,000 GPU × 30% / 2 = 150 GPU per claim.
    let (mut chain, a, _) = serving(1_000_000);
    // 50 GPU deposit at 1.5 GPU per million tokens: 40M tokens would be 60 GPU.
    let big = receipts(a.id, 0, 1, 40_000_000);
    assert!(matches!(
        claim(&mut chain, 5, 10, &big),
        Err(ServingError::ClaimOverDeposit { .. })
    ));
    // With audits at 1 ppm the bond backs almost nothing: 150 ugpu.
    let (mut chain, a, _) = serving(1);
    let (max, amount) = match claim(&mut chain, 5, 10, &receipts(a.id, 0, 1, 1_000_000)) {
        Err(ServingError::ClaimOverBond { amount, max }) => (max, amount),
        other => panic!("{other:?}"),
    };
    assert_eq!((max, amount), (150, 3 * GPU / 2));
    // A provider whose bond shrank cannot claim what it could before.
    assert_eq!(max_claim(1_000 * GPU, 300_000, 50_000), 7_500_000);
    assert_eq!(max_claim(100 * GPU, 300_000, 50_000), 750_000);
}

#[test]
fn claims_past_ten_times_what_the_bond_backs_in_one_window_are_audited_for_sure() {
    // A provider cheating at volume posts claims faster than a slash for any of them can
    // land: within one window (a claim to the latest its slash could land) the bond backs
    // ten largest claims at the ordinary audit chance; every claim past them is audited.
    let (mut chain, a, b) = serving(5_000);
    let max = max_claim(1_000 * GPU, 300_000, 5_000);
    assert_eq!(max, 750_000);
    // 500,000 tokens at the leases' 1.5 GPU per million: one largest claim.
    let units = 500_000;
    for seq in 0..10 {
        claim(&mut chain, 5, 10, &receipts(a.id, seq, 1, units)).unwrap();
    }
    let length = claim_window_blocks(&chain.state.serving_params());
    // The reveal window, two juries of five draws of ten blocks (no appeal window here).
    assert_eq!(length, 10 + 2 * 5 * 10);
    let first_ten: Vec<u64> = chain.state.serving_claims().iter().map(|c| c.id).collect();
    assert!(first_ten
        .iter()
        .all(|id| !chain.state.serving_forced_audit(*id)));
    // The eleventh is taken (acknowledged work is never left unpaid at an order's close)
    // and audited whatever the roll; so is the next, later in the same window.
    claim(&mut chain, 6, 10, &receipts(a.id, 10, 1, units)).unwrap();
    claim(&mut chain, 4 + length, 10, &receipts(a.id, 11, 1, units)).unwrap();
    // Another provider's window is its own.
    claim(&mut chain, 6, 11, &receipts(b.id, 0, 1, units)).unwrap();
    let forced: Vec<u64> = chain
        .state
        .serving_claims()
        .iter()
        .filter(|c| chain.state.serving_forced_audit(c.id))
        .map(|c| c.lease_id * 100 + c.first_seq)
        .collect();
    assert_eq!(forced, vec![a.id * 100 + 10, a.id * 100 + 11]);
    chain.end_block(6);
    let eleventh = chain
        .state
        .serving_claims()
        .into_iter()
        .find(|c| c.lease_id == a.id && c.first_seq == 10)
        .unwrap();
    assert!(matches!(eleventh.stage, ClaimStage::AwaitingReveal { .. }));
    // The next window starts afresh.
    claim(&mut chain, 5 + length, 10, &receipts(a.id, 12, 1, units)).unwrap();
    assert_eq!(
        chain.state.serving_claim_window(&addr(10)),
        ClaimWindow {
            since: 5 + length,
            claimed: max
        }
    );
    let last = chain
        .state
        .serving_claims()
        .into_iter()
        .max_by_key(|c| c.id)
        .unwrap();
    assert!(!chain.state.serving_forced_audit(last.id));
}

#[test]
fn an_audited_receipt_nobody_reveals_slashes_the_provider_and_refunds_the_whole_claim() {
    let (mut chain, a, _) = serving(1_000_000);
    let client = chain.balance(CLIENT);
    let bond = chain.state.provider(&addr(10)).unwrap().bonded;
    claim(&mut chain, 5, 10, &receipts(a.id, 0, 3, 1_000)).unwrap();
    chain.end_block(5);
    let claim = chain.state.serving_claims().pop().unwrap();
    assert!(matches!(
        claim.stage,
        ClaimStage::AwaitingReveal { deadline: 15, .. }
    ));
    let deposit = chain.state.serving_order(1).unwrap().deposit;
    chain.run(6, 15);
    assert!(chain.state.serving_claims().is_empty());
    assert_eq!(
        chain.state.provider(&addr(10)).unwrap().bonded,
        bond - bond * 3 / 10
    );
    let half_slash = bond * 3 / 10 / 2;
    assert_eq!(
        chain.balance(CLIENT),
        client + claim.amount + claim.audit_reserve + half_slash,
        "the whole claim back, and the client's share of the slash"
    );
    let lease = chain.state.serving_lease(a.id).unwrap();
    assert_eq!(lease.state, ServingLeaseState::Dropped);
    assert_eq!(lease.paid, 0);
    assert_eq!(chain.state.serving_order(1).unwrap().deposit, deposit);
}

/// Reveals the drawn receipt of the only open claim as `who`.
pub(crate) fn reveal(chain: &mut Chain, height: u64, who: u8) -> Result<(), ServingError> {
    let claim = chain.state.serving_claims().pop().unwrap();
    let ClaimStage::AwaitingReveal { index, .. } = claim.stage else {
        panic!("not awaiting a reveal: {:?}", claim.stage)
    };
    let rs = receipts(claim.lease_id, claim.first_seq, claim.count, 1_000);
    let leaves: Vec<[u8; 32]> = rs.iter().map(receipt::Receipt::leaf).collect();
    let seq = claim.first_seq + index;
    chain.exec(
        height,
        who,
        ServingMsg::Reveal(MsgRevealReceipt {
            claim_id: claim.id,
            receipt: rs[index as usize].clone(),
            proof: merkle_proof(&leaves, index as usize).unwrap(),
            request: request(seq),
            response: response(seq),
        }),
    )
}

pub(crate) fn assignee(chain: &Chain) -> Option<u8> {
    let claim = chain.state.serving_claims().pop()?;
    let ClaimStage::Judging(j) = claim.stage else {
        return None;
    };
    let who = j.assignee?;
    VERIFIERS.iter().copied().find(|v| addr(*v) == who)
}

pub(crate) fn verdict(chain: &mut Chain, height: u64, honest: bool) {
    let claim = chain.state.serving_claims().pop().unwrap();
    let v = assignee(chain).unwrap();
    chain
        .exec(
            height,
            v,
            ServingMsg::Verdict(MsgServingVerdict {
                claim_id: claim.id,
                honest,
            }),
        )
        .unwrap();
}

#[test]
fn a_revealed_receipt_judged_honest_pays_the_provider_and_the_fee_from_the_clients_reserve() {
    let (mut chain, a, _) = serving(1_000_000);
    let p10 = chain.balance(10);
    claim(&mut chain, 5, 10, &receipts(a.id, 0, 3, 1_000)).unwrap();
    chain.end_block(5);
    // Bad reveals are refused and change nothing.
    let claim = chain.state.serving_claims().pop().unwrap();
    let ClaimStage::AwaitingReveal { index, .. } = claim.stage else {
        panic!()
    };
    let rs = receipts(a.id, 0, 3, 1_000);
    let leaves: Vec<[u8; 32]> = rs.iter().map(receipt::Receipt::leaf).collect();
    let other = (index as usize + 1) % 3;
    let good = MsgRevealReceipt {
        claim_id: claim.id,
        receipt: rs[index as usize].clone(),
        proof: merkle_proof(&leaves, index as usize).unwrap(),
        request: request(index),
        response: response(index),
    };
    let mut wrong_receipt = good.clone();
    wrong_receipt.receipt = rs[other].clone();
    wrong_receipt.proof = merkle_proof(&leaves, other).unwrap();
    let mut wrong_body = good.clone();
    wrong_body.response = b"a smaller model's answer".to_vec();
    let mut wrong_proof = good.clone();
    wrong_proof.proof.pop();
    for bad in [wrong_receipt, wrong_body, wrong_proof] {
        assert!(matches!(
            chain.exec(6, 10, ServingMsg::Reveal(bad)),
            Err(ServingError::BadReveal(_))
        ));
    }
    assert!(matches!(
        chain.exec(6, 30, ServingMsg::Reveal(good.clone())),
        Err(ServingError::NotAllowed { .. })
    ));
    // The client may reveal as well as the provider.
    chain.exec(6, CLIENT, ServingMsg::Reveal(good)).unwrap();
    let v = assignee(&chain).unwrap();
    let fee_before = chain.balance(v);
    // Only the assigned verifier's verdict counts.
    let other_v = VERIFIERS.iter().copied().find(|x| *x != v).unwrap();
    assert_eq!(
        chain.exec(
            7,
            other_v,
            ServingMsg::Verdict(MsgServingVerdict {
                claim_id: claim.id,
                honest: false
            })
        ),
        Err(ServingError::NotAssigned(addr(other_v)))
    );
    verdict(&mut chain, 7, true);
    chain.end_block(7);
    assert!(chain.state.serving_claims().is_empty());
    assert_eq!(chain.balance(10), p10 + claim.amount);
    assert_eq!(chain.balance(v), fee_before + claim.audit_reserve);
    assert_eq!(chain.state.verifier(&addr(v)).unwrap().open_cases, 0);
}

#[test]
fn one_verifier_alone_cannot_get_an_honest_provider_slashed() {
    let (mut chain, a, _) = serving(1_000_000);
    let bond = chain.state.provider(&addr(10)).unwrap().bonded;
    let p10 = chain.balance(10);
    claim(&mut chain, 5, 10, &receipts(a.id, 0, 2, 1_000)).unwrap();
    chain.end_block(5);
    reveal(&mut chain, 6, 10).unwrap();
    let liar = assignee(&chain).unwrap();
    let liar_bond = chain.state.verifier(&addr(liar)).unwrap().bonded;
    verdict(&mut chain, 6, false);
    // The `faulty` verdict needs a second verifier; it says honest, so a third decides.
    let second = assignee(&chain).unwrap();
    assert_ne!(second, liar);
    verdict(&mut chain, 7, true);
    let third = assignee(&chain).unwrap();
    assert!(third != liar && third != second);
    verdict(&mut chain, 8, true);
    chain.end_block(8);
    assert_eq!(
        chain.state.provider(&addr(10)).unwrap().bonded,
        bond,
        "never slashed"
    );
    let claim_amount = 2_000 * (3 * GPU / 2) / 1_000_000;
    let vp = gpuchain_verify::VerifyParams::default();
    let harmed_share = gpuchain_types::mul_ppm(
        gpuchain_types::mul_ppm(liar_bond, vp.verifier_wrong_slash_ppm).unwrap(),
        vp.wrong_slash_harmed_share_ppm,
    )
    .unwrap();
    assert_eq!(
        chain.balance(10),
        p10 + claim_amount + harmed_share,
        "paid, and compensated out of the liar's slash"
    );
    let liar_after = chain.state.verifier(&addr(liar)).unwrap();
    assert!(
        liar_after.bonded < liar_bond,
        "the overturned verifier is slashed"
    );
    assert!(chain.state.serving_claims().is_empty());
}

#[test]
fn two_agreeing_verifiers_slash_a_cheating_provider_and_refund_the_whole_claim() {
    let (mut chain, a, _) = serving(1_000_000);
    let bond = chain.state.provider(&addr(10)).unwrap().bonded;
    let client = chain.balance(CLIENT);
    claim(&mut chain, 5, 10, &receipts(a.id, 0, 2, 1_000)).unwrap();
    chain.end_block(5);
    let claim = chain.state.serving_claims().pop().unwrap();
    reveal(&mut chain, 6, 10).unwrap();
    let first = assignee(&chain).unwrap();
    verdict(&mut chain, 6, false);
    let second = assignee(&chain).unwrap();
    let (f1, f2) = (chain.balance(first), chain.balance(second));
    verdict(&mut chain, 7, false);
    chain.end_block(7);
    let slashed = bond * 3 / 10;
    assert_eq!(
        chain.state.provider(&addr(10)).unwrap().bonded,
        bond - slashed
    );
    // The client gets the claim and its reserve back from escrow (the deposit was debited)
    // plus its share of the slash left after the audit fee.
    let after_fee = slashed - claim.audit_reserve;
    assert_eq!(
        chain.balance(CLIENT),
        client + claim.amount + claim.audit_reserve + after_fee / 2
    );
    // The verifiers share the fee; the first is the prover.
    let fee_half = claim.audit_reserve / 2;
    let prover = after_fee * 3 / 10;
    assert_eq!(chain.balance(first), f1 + fee_half + prover);
    assert_eq!(chain.balance(second), f2 + fee_half);
    assert_eq!(
        chain.state.serving_lease(a.id).unwrap().state,
        ServingLeaseState::Dropped
    );
    assert!(chain.state.provider(&addr(10)).unwrap().is_jailed(8));
}

#[test]
fn a_verifier_that_misses_its_deadline_is_slashed_and_replaced() {
    let (mut chain, a, _) = serving(1_000_000);
    claim(&mut chain, 5, 10, &receipts(a.id, 0, 2, 1_000)).unwrap();
    chain.end_block(5);
    reveal(&mut chain, 6, 10).unwrap();
    let lazy = assignee(&chain).unwrap();
    let bond = chain.state.verifier(&addr(lazy)).unwrap().bonded;
    chain.run(6, 16);
    let replacement = assignee(&chain).unwrap();
    assert_ne!(replacement, lazy);
    let after = chain.state.verifier(&addr(lazy)).unwrap();
    assert!(after.bonded < bond && after.misses == 1 && after.open_cases == 0);
    verdict(&mut chain, 17, true);
    chain.end_block(17);
    assert!(chain.state.serving_claims().is_empty());
}

#[test]
fn a_verifier_that_cannot_judge_a_model_steps_down_unslashed_and_a_claim_nobody_can_judge_ends() {
    // One owner of the client and the provider orders a model no verifier runs: every juror
    // drawn recuses, none is slashed or jailed, and the claim ends paid after the draws.
    let (mut chain, a, _) = serving(1_000_000);
    claim(&mut chain, 5, 10, &receipts(a.id, 0, 2, 1_000)).unwrap();
    chain.end_block(5);
    let claim = chain.state.serving_claims().pop().unwrap();
    reveal(&mut chain, 6, 10).unwrap();
    let bonds: Vec<_> = VERIFIERS
        .iter()
        .map(|v| chain.state.verifier(&addr(*v)).unwrap().bonded)
        .collect();
    let recuse = ServingMsg::Recuse(MsgServingRecuse { claim_id: claim.id });
    let first = assignee(&chain).unwrap();
    let other = *VERIFIERS.iter().find(|v| **v != first).unwrap();
    assert_eq!(
        chain.exec(7, other, recuse.clone()),
        Err(ServingError::NotAssigned(addr(other))),
        "only the assigned verifier may step down"
    );
    let mut recused = Vec::new();
    let mut height = 7;
    while let Some(v) = assignee(&chain) {
        assert!(
            !recused.contains(&v),
            "a verifier that stepped down is never drawn again"
        );
        chain.exec(height, v, recuse.clone()).unwrap();
        recused.push(v);
        height += 1;
    }
    assert_eq!(
        recused.len(),
        VERIFIERS.len(),
        "every verifier drawn in turn"
    );
    let recusals = chain.events.iter().filter(|e| e.kind == "serving.recused");
    assert_eq!(recusals.count(), recused.len());
    assert!(chain.state.serving_claims().is_empty(), "paid: no verdict");
    assert!(chain.state.slash_records().is_empty());
    chain.run(height, height + 30);
    for (v, bond) in VERIFIERS.iter().zip(bonds) {
        let record = chain.state.verifier(&addr(*v)).unwrap();
        assert_eq!(
            (record.bonded, record.misses, record.open_cases),
            (bond, 0, 0)
        );
        assert!(record.jailed_until <= height, "never jailed");
    }
}

#[test]
fn a_recusal_never_takes_the_place_of_a_juror_that_judges() {
    // Three draws, and every `honest` gets a second opinion: two recusals use none of them,
    // so the third and fourth verifiers still judge the receipt (else it ended unjudged).
    let three_draws = ServingParams {
        max_jury_draws: 3,
        second_opinion_ppm: 1_000_000,
        ..params(1_000_000)
    };
    let (mut chain, a, _) = serving_with(three_draws);
    claim(&mut chain, 5, 10, &receipts(a.id, 0, 2, 1_000)).unwrap();
    chain.end_block(5);
    let claim = chain.state.serving_claims().pop().unwrap();
    reveal(&mut chain, 6, 10).unwrap();
    let recuse = ServingMsg::Recuse(MsgServingRecuse { claim_id: claim.id });
    for height in [7, 8] {
        let v = assignee(&chain).unwrap();
        chain.exec(height, v, recuse.clone()).unwrap();
    }
    verdict(&mut chain, 9, true);
    verdict(&mut chain, 10, true);
    chain.end_block(10);
    let settled = chain
        .events
        .iter()
        .find(|e| e.kind == "serving.claim_settled")
        .unwrap();
    assert_eq!(settled.get("outcome"), Some("honest"));
}

#[test]
fn without_eligible_verifiers_a_revealed_claim_is_paid_and_nobody_slashed() {
    let (mut chain, a, _) = serving(1_000_000);
    // Every verifier funded the client first: tied to a party, none may judge.
    for v in VERIFIERS {
        chain.state.apply(
            [(
                gpuchain_bank::state_key::funder(&addr(v)),
                Some(borsh::to_vec(&addr(CLIENT)).unwrap()),
            )]
            .into_iter()
            .collect(),
        );
    }
    let p10 = chain.balance(10);
    claim(&mut chain, 5, 10, &receipts(a.id, 0, 2, 1_000)).unwrap();
    chain.end_block(5);
    let claim = chain.state.serving_claims().pop().unwrap();
    reveal(&mut chain, 6, 10).unwrap();
    assert!(chain.state.serving_claims().is_empty());
    assert_eq!(chain.balance(10), p10 + claim.amount);
    assert!(chain.state.slash_records().is_empty());
}

#[test]
fn a_reported_provider_that_answers_loses_nothing_and_one_that_does_not_loses_the_lease() {
    let (mut chain, a, b) = serving(50_000);
    let report = |id| ServingMsg::Report(MsgReportUnresponsive { lease_id: id });
    let heartbeat = |id| ServingMsg::Heartbeat(MsgServingHeartbeat { lease_id: id });
    // Only the client reports, once at a time; only the provider answers.
    assert!(matches!(
        chain.exec(5, 10, report(a.id)),
        Err(ServingError::NotAllowed { .. })
    ));
    assert_eq!(
        chain.exec(5, 10, heartbeat(a.id)),
        Err(ServingError::NoReport(a.id))
    );
    chain.exec(5, CLIENT, report(a.id)).unwrap();
    chain.exec(5, CLIENT, report(b.id)).unwrap();
    assert_eq!(
        chain.exec(5, CLIENT, report(a.id)),
        Err(ServingError::CannotReport(a.id))
    );
    assert!(matches!(
        chain.exec(6, 11, heartbeat(a.id)),
        Err(ServingError::NotAllowed { .. })
    ));
    chain.exec(6, 10, heartbeat(a.id)).unwrap();
    let bond_a = chain.state.provider(&addr(10)).unwrap().bonded;
    let bond_b = chain.state.provider(&addr(11)).unwrap().bonded;
    let client = chain.balance(CLIENT);
    chain.run(5, 15);
    assert_eq!(chain.state.provider(&addr(10)).unwrap().bonded, bond_a);
    assert_eq!(
        chain.state.serving_lease(a.id).unwrap().state,
        ServingLeaseState::Serving
    );
    let slashed = bond_b * 2 / 100;
    assert_eq!(
        chain.state.provider(&addr(11)).unwrap().bonded,
        bond_b - slashed
    );
    assert_eq!(
        chain.balance(CLIENT),
        client,
        "burned: a report the client could provoke never pays it"
    );
    let lost = chain.state.serving_lease(b.id).unwrap();
    assert_eq!(
        (lost.state, lost.end_height),
        (ServingLeaseState::Dropped, 15)
    );
    // It can still claim what the client acknowledged before.
    claim(&mut chain, 16, 11, &receipts(b.id, 0, 1, 100)).unwrap();
    chain.end_block(16);
}

#[test]
fn ending_early_stops_the_leases_and_refunds_the_rest_after_the_claim_grace() {
    let (mut chain, a, _) = serving(50_000);
    assert!(!chain.state.serving_order(1).unwrap().ended_early());
    let end = ServingMsg::End(MsgEndServing { order_id: 1 });
    assert!(matches!(
        chain.exec(10, 10, end.clone()),
        Err(ServingError::NotAllowed { .. })
    ));
    chain.exec(10, CLIENT, end.clone()).unwrap();
    let order = chain.state.serving_order(1).unwrap();
    assert_eq!((order.end_height, order.close_height), (10, 30));
    assert!(order.ended_early());
    assert_eq!(chain.state.serving_lease(a.id).unwrap().end_height, 10);
    chain.run(10, 29);
    claim(&mut chain, 29, 10, &receipts(a.id, 0, 1, 1_000)).unwrap();
    let client = chain.balance(CLIENT);
    let deposit = chain.state.serving_order(1).unwrap().deposit;
    chain.run(29, 30);
    assert_eq!(
        chain.balance(CLIENT),
        client + deposit + ServingParams::default().min_audit_fee
    );
    assert_eq!(
        chain.exec(31, CLIENT, end),
        Err(ServingError::OrderClosed(1))
    );
    assert_eq!(chain.state.open_leases(&addr(10)), 0);
}

#[test]
fn a_provider_with_a_serving_lease_cannot_walk_away_with_its_bond() {
    let (chain, _, _) = serving(1);
    assert_eq!(chain.state.open_leases(&addr(10)), 1);
    assert_eq!(chain.state.open_leases(&addr(11)), 1);
}

#[test]
fn messages_round_trip_through_borsh_and_json_with_fixed_variant_indexes() {
    let msg = ServingMsg::Verdict(MsgServingVerdict {
        claim_id: 3,
        honest: true,
    });
    let bytes = borsh::to_vec(&msg).unwrap();
    assert_eq!(bytes[0], 7);
    assert_eq!(borsh::from_slice::<ServingMsg>(&bytes).unwrap(), msg);
    let claim = ServingMsg::Claim(claim_msg(&receipts(1, 0, 2, 5), CLIENT));
    let json = serde_json::to_value(&claim).unwrap();
    assert_eq!(json["type"], "claim");
    assert_eq!(json["root"].as_str().unwrap().len(), 64);
    let reveal = ServingMsg::Reveal(MsgRevealReceipt {
        claim_id: 1,
        receipt: receipts(1, 0, 1, 5).remove(0),
        proof: vec![[1; 32], [2; 32]],
        request: b"q".to_vec(),
        response: b"a".to_vec(),
    });
    let json = serde_json::to_string(&reveal).unwrap();
    assert_eq!(serde_json::from_str::<ServingMsg>(&json).unwrap(), reveal);
    let appeal = ServingMsg::Appeal(MsgAppealServing { claim_id: 4 });
    assert_eq!(borsh::to_vec(&appeal).unwrap()[0], 8);
    let recuse = ServingMsg::Recuse(MsgServingRecuse { claim_id: 4 });
    assert_eq!(borsh::to_vec(&recuse).unwrap()[0], 9);
    assert_eq!(
        serde_json::to_value(&recuse).unwrap(),
        serde_json::json!({"type": "recuse", "claim_id": 4})
    );
    assert_eq!(
        serde_json::to_value(&appeal).unwrap(),
        serde_json::json!({"type": "appeal", "claim_id": 4})
    );
}
