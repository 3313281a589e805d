use gpuchain_types::{Address, MemState, Overlay, StateRead};

use super::*;
use crate::{BankGenesis, BankRead, MsgMultiSend, MsgSend, Output};

fn funded(alice: Address, amount: u128) -> MemState {
    let mut base = MemState::new();
    let mut fork = Overlay::new(&base);
    BankGenesis {
        params: BankParams::default(),
        balances: vec![(alice, amount)],
    }
    .apply(&mut fork)
    .unwrap();
    let (writes, _) = fork.into_parts();
    base.apply(writes);
    base
}

fn sum_balances(state: &impl StateRead) -> u128 {
    state.all_balances().into_iter().map(|(_, a)| a).sum()
}

#[test]
fn send_moves_funds_and_conserves_supply() {
    let (alice, bob) = (Address([1; 20]), Address([2; 20]));
    let base = funded(alice, 1_000);
    let mut fork = Overlay::new(&base);
    execute(
        &mut fork,
        &alice,
        &BankMsg::Send(MsgSend {
            to: bob,
            amount: 300,
        }),
    )
    .unwrap();
    assert_eq!((fork.balance(&alice), fork.balance(&bob)), (700, 300));
    assert_eq!(sum_balances(&fork), fork.supply());
}

#[test]
fn the_first_transfer_into_a_new_account_records_its_funder_once() {
    let (alice, bob, carol) = (Address([1; 20]), Address([2; 20]), Address([3; 20]));
    let base = funded(alice, 1_000);
    let mut fork = Overlay::new(&base);
    assert_eq!(fork.funder(&alice), None, "genesis balances have no funder");
    let send = |to, amount| BankMsg::Send(MsgSend { to, amount });
    execute(&mut fork, &alice, &send(bob, 300)).unwrap();
    execute(&mut fork, &alice, &send(carol, 100)).unwrap();
    execute(&mut fork, &carol, &send(bob, 50)).unwrap();
    assert_eq!(
        fork.funder(&bob),
        Some(alice),
        "later payers do not replace it"
    );
    assert_eq!(fork.funder(&carol), Some(alice));
    // Drained and paid again by someone else, an account keeps its first funder.
    execute(&mut fork, &bob, &send(alice, 350)).unwrap();
    execute(&mut fork, &carol, &send(bob, 10)).unwrap();
    assert_eq!(fork.funder(&bob), Some(alice));
}

#[test]
fn each_bad_transfer_has_its_own_error_and_changes_nothing() {
    let (alice, bob) = (Address([1; 20]), Address([2; 20]));
    let base = funded(alice, 1_000);
    let params = BankParams::default();
    let cases: Vec<(BankMsg, BankError)> = vec![
        (
            BankMsg::Send(MsgSend {
                to: bob,
                amount: 1_001,
            }),
            BankError::InsufficientFunds {
                address: alice,
                available: 1_000,
                required: 1_001,
            },
        ),
        (
            BankMsg::Send(MsgSend { to: bob, amount: 0 }),
            BankError::ZeroAmount,
        ),
        (
            BankMsg::MultiSend(MsgMultiSend {
                outputs: vec![
                    Output {
                        to: bob,
                        amount: u128::MAX,
                    },
                    Output { to: bob, amount: 1 },
                ],
            }),
            BankError::Overflow,
        ),
        (
            BankMsg::MultiSend(MsgMultiSend { outputs: vec![] }),
            BankError::OutputCount { got: 0, max: 64 },
        ),
    ];
    for (msg, expected) in cases {
        let mut fork = Overlay::new(&base);
        let got = check_stateless(&msg, || params.clone())
            .and_then(|()| execute(&mut fork, &alice, &msg));
        assert_eq!(got, Err(expected), "{msg:?}");
    }
}

#[test]
fn multi_send_is_all_or_nothing() {
    let (alice, bob, carol) = (Address([1; 20]), Address([2; 20]), Address([3; 20]));
    let base = funded(alice, 100);
    let mut fork = Overlay::new(&base);
    let msg = BankMsg::MultiSend(MsgMultiSend {
        outputs: vec![
            Output {
                to: bob,
                amount: 60,
            },
            Output {
                to: carol,
                amount: 60,
            },
        ],
    });
    assert!(matches!(
        execute(&mut fork, &alice, &msg),
        Err(BankError::InsufficientFunds { .. })
    ));
    assert!(fork.writes().is_empty());
}

#[test]
fn charging_a_signer_checks_the_nonce_and_funds_and_writes_nothing_on_refusal() {
    use crate::{Account, BankWrite, ChargeError};
    let (alice, pool) = (Address([1; 20]), Address([9; 20]));
    let base = funded(alice, 100);

    let mut fork = Overlay::new(&base);
    assert_eq!(
        fork.charge_signer(&alice, 1, 10, &pool),
        Err(ChargeError::BadNonce { expected: 0 })
    );
    assert_eq!(
        fork.charge_signer(&alice, 0, 101, &pool),
        Err(ChargeError::CannotPayFee { balance: 100 })
    );
    assert!(fork.writes().is_empty(), "a refused charge writes nothing");

    fork.charge_signer(&alice, 0, 10, &pool).unwrap();
    assert_eq!(
        fork.account(&alice),
        Account {
            balance: 90,
            nonce: 1
        }
    );
    assert_eq!(fork.balance(&pool), 10);
    fork.charge_signer(&alice, 1, 0, &pool).unwrap();
    assert_eq!(
        fork.nonce(&alice),
        2,
        "a free transaction still uses its nonce"
    );
    assert_eq!(sum_balances(&fork), fork.supply());
}
