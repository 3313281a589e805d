//! Verifiers' serving models: who may declare them, and that juries and orders follow them.

use crate::test_utils::*;
use crate::tests::{assignee, claim, params, reveal, serving_after, serving_with};
use crate::*;
use gpuchain_types::StateRead;

fn declare(
    chain: &mut Chain,
    height: u64,
    who: u8,
    models: Vec<[u8; 32]>,
) -> Result<(), ServingError> {
    chain.exec(height, who, ServingMsg::Models(MsgServingModels { models }))
}

#[test]
fn only_verifiers_that_judge_a_claims_model_are_drawn_for_it() {
    // Two of the four verifiers withdraw the model: the draws never reach them, so a
    // claim's jurors are the two that run it, and once both stepped down the claim ends
    // paid with no verdict instead of cycling through verifiers that cannot judge it.
    let (mut chain, a, _) = serving_with(params(1_000_000));
    let (runs, withdrawn) = (&VERIFIERS[..2], &VERIFIERS[2..]);
    for &v in withdrawn {
        declare(&mut chain, 4, v, Vec::new()).unwrap();
        assert!(!chain.state.judges_model(&addr(v), &model().blake3));
    }
    claim(&mut chain, 5, 10, &receipts(a.id, 0, 2, 1_000)).unwrap();
    chain.end_block(5);
    let claim_id = chain.state.serving_claims().pop().unwrap().id;
    reveal(&mut chain, 6, 10).unwrap();
    let recuse = ServingMsg::Recuse(MsgServingRecuse { claim_id });
    let mut drawn = Vec::new();
    let mut height = 7;
    while let Some(v) = assignee(&chain) {
        drawn.push(v);
        chain.exec(height, v, recuse.clone()).unwrap();
        height += 1;
    }
    drawn.sort_unstable();
    assert_eq!(
        drawn, runs,
        "every juror drawn judges the model, and only they"
    );
    assert!(chain.state.serving_claims().is_empty(), "paid: no verdict");
}

#[test]
fn an_order_for_a_model_no_other_eligible_verifier_judges_is_refused_and_moves_nothing() {
    let mut chain = Chain::new(params(50_000));
    let other_model = MsgOpenServing {
        model: ModelRef {
            blake3: [1; 32],
            ..model()
        },
        ..open_msg()
    };
    let before = chain.balance(CLIENT);
    assert_eq!(
        chain.exec(1, CLIENT, ServingMsg::Open(other_model)),
        Err(ServingError::NoJudge("01".repeat(32)))
    );
    // A client that is itself the only verifier judging the model cannot be its own juror.
    for &v in &VERIFIERS[1..] {
        declare(&mut chain, 1, v, Vec::new()).unwrap();
    }
    let own = MsgOpenServing { ..open_msg() };
    assert_eq!(
        chain.exec(2, VERIFIERS[0], ServingMsg::Open(own.clone())),
        Err(ServingError::NoJudge("09".repeat(32)))
    );
    assert_eq!(chain.balance(CLIENT), before);
    chain.exec(3, CLIENT, ServingMsg::Open(own)).unwrap();
    assert_eq!(chain.balance(CLIENT), before - open_msg().deposit);
}

#[test]
fn a_provider_that_would_be_its_own_only_judge_does_not_win_a_lease() {
    // The only verifier left judging the model was funded first by provider 10, so 10's
    // claims could never be judged: its bid, the lowest, loses to 11's and 12's.
    let (chain, a, b) = serving_after(params(50_000), |chain| {
        for &v in &VERIFIERS[1..] {
            declare(chain, 1, v, Vec::new()).unwrap();
        }
        let funder = gpuchain_bank::state_key::funder(&addr(VERIFIERS[0]));
        let mut funded = gpuchain_types::Write::new();
        funded.insert(funder, Some(borsh::to_vec(&addr(10)).unwrap()));
        chain.state.apply(funded);
    });
    assert_eq!((a.provider, b.provider), (addr(11), addr(12)));
    let order = chain.state.serving_order(1).unwrap();
    assert_eq!(
        order.price,
        9 * GPU / 5,
        "the highest winning bid sets the price"
    );
}

#[test]
fn a_verifier_declares_a_short_list_of_distinct_models_and_nobody_else_declares() {
    let mut chain = Chain::new(params(50_000));
    let v = VERIFIERS[0];
    assert_eq!(
        declare(&mut chain, 1, CLIENT, vec![[2; 32]]),
        Err(ServingError::Verify(
            gpuchain_verify::VerifyError::NotAVerifier(addr(CLIENT))
        ))
    );
    let twice = vec![[2; 32], [3; 32], [2; 32]];
    let too_many: Vec<[u8; 32]> = (0..=MAX_JUDGED_MODELS).map(|i| [i as u8; 32]).collect();
    for (list, got, distinct) in [(twice, 3, 2), (too_many, 17, 17)] {
        let msg = ServingMsg::Models(MsgServingModels { models: list });
        let bad = || ServingError::BadModelList {
            max: MAX_JUDGED_MODELS,
            got,
            distinct,
        };
        assert_eq!(handler::check_stateless(&msg, &params(50_000)), Err(bad()));
        assert_eq!(chain.exec(1, v, msg), Err(bad()));
    }
    // A new list replaces the old one, sorted; an empty one withdraws every model.
    declare(&mut chain, 2, v, vec![[5; 32], [4; 32]]).unwrap();
    assert_eq!(
        chain.state.serving_judged_models(&addr(v)),
        vec![[4; 32], [5; 32]]
    );
    assert!(!chain.state.judges_model(&addr(v), &model().blake3));
    let declared = chain
        .events
        .iter()
        .filter(|e| e.kind == "serving.models_declared");
    assert_eq!(declared.count(), 1);
    declare(&mut chain, 3, v, Vec::new()).unwrap();
    assert!(chain
        .state
        .get_raw(&state_key::judged_models(&addr(v)))
        .is_none());
}

#[test]
fn a_genesis_names_only_genesis_verifiers_each_once() {
    let chain = Chain::new(params(50_000));
    let judge = |who: u8| GenesisJudge {
        verifier: addr(who),
        models: vec![model().blake3],
    };
    for (judges, why) in [
        (vec![judge(CLIENT)], "not a genesis verifier"),
        (
            vec![judge(VERIFIERS[0]), judge(VERIFIERS[0])],
            "listed twice",
        ),
    ] {
        let mut fork = gpuchain_types::Overlay::new(&chain.state);
        let genesis = ServingGenesis {
            params: params(50_000),
            judges,
        };
        match genesis.apply(&mut fork) {
            Err(ServingError::InvalidParams(e)) => assert!(e.contains(why), "{e}"),
            other => panic!("expected {why}, got {other:?}"),
        }
    }
}
