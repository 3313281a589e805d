use gpuchain_staking::{ActiveValidator, StakingWrite};
use gpuchain_types::{Address, BlockCtx, Event, MemState, Overlay};

use crate::handler::{check_stateless, execute};
use crate::{
    begin_block, record_applied, MsgSignalUpgrade, MsgWithdrawSignal, Plan, UpgradeError,
    UpgradeMsg, UpgradeRead, UpgradeWrite, MIN_UPGRADE_DELAY_BLOCKS,
};

fn operator(i: u8) -> Address {
    Address::from_public_key(&[i; 32])
}

/// Active validators `operator(1)`, `operator(2)`, … with these powers.
fn with_powers(powers: &[u64]) -> MemState {
    let mut state = MemState::new();
    let mut fork = Overlay::new(&state);
    let set: Vec<_> = (1u8..)
        .zip(powers)
        .map(|(i, &power)| {
            (
                [i; 20],
                ActiveValidator {
                    operator: operator(i),
                    pubkey: [i; 32],
                    power,
                },
            )
        })
        .collect();
    fork.put_active_set(&set);
    let (writes, _) = fork.into_parts();
    state.apply(writes);
    state
}

/// Four active validators with powers 10, 20, 30, 40.
fn state() -> MemState {
    with_powers(&[10, 20, 30, 40])
}

fn ctx(height: u64) -> BlockCtx {
    BlockCtx {
        height,
        chain_id: "test".into(),
        entropy: [0; 32],
        time_ms: height.saturating_mul(1_000),
    }
}

fn signal(name: &str, height: u64) -> UpgradeMsg {
    UpgradeMsg::Signal(MsgSignalUpgrade {
        name: name.into(),
        height,
    })
}

/// Runs `msg` from `signer` at `at`; applies it only if it succeeded, as a transaction would.
fn run(
    state: &mut MemState,
    at: u64,
    signer: Address,
    msg: &UpgradeMsg,
) -> Result<Vec<Event>, UpgradeError> {
    check_stateless(msg)?;
    let mut fork = Overlay::new(state);
    execute(&mut fork, &ctx(at), &signer, msg)?;
    let (writes, events) = fork.into_parts();
    state.apply(writes);
    Ok(events)
}

#[test]
fn a_plan_is_scheduled_only_once_more_than_two_thirds_of_the_power_signals_it() {
    let mut s = state();
    // 40 + 20 = 60 of 100: not enough.
    run(&mut s, 5, operator(4), &signal("v2", 100)).unwrap();
    run(&mut s, 5, operator(2), &signal("v2", 100)).unwrap();
    assert_eq!(s.upgrade_plan(), None);
    // A vote for another height does not count towards this plan: 60 + 0.
    run(&mut s, 5, operator(1), &signal("v2", 101)).unwrap();
    assert_eq!(s.upgrade_plan(), None);
    // 60 + 10 (validator 1 changes its mind) = 70 > 66.6.
    let events = run(&mut s, 6, operator(1), &signal("v2", 100)).unwrap();
    assert_eq!(
        s.upgrade_plan(),
        Some(Plan {
            name: "v2".into(),
            height: 100
        })
    );
    assert!(events.iter().any(|e| e.kind == "upgrade.scheduled"));
    assert!(
        s.upgrade_signals().is_empty(),
        "signals start over after a schedule"
    );
}

#[test]
fn exactly_two_thirds_is_not_enough() {
    let mut s = with_powers(&[1, 1, 1]);
    run(&mut s, 1, operator(1), &signal("v2", 50)).unwrap();
    run(&mut s, 1, operator(2), &signal("v2", 50)).unwrap();
    assert_eq!(s.upgrade_plan(), None, "2 of 3 is not more than two thirds");
    run(&mut s, 1, operator(3), &signal("v2", 50)).unwrap();
    assert!(s.upgrade_plan().is_some());
}

#[test]
fn bad_signals_are_refused_and_change_nothing() {
    let mut s = state();
    let before = s.entries().clone();
    let outsider = operator(9);
    assert_eq!(
        run(&mut s, 5, outsider, &signal("v2", 100)),
        Err(UpgradeError::NotAnActiveValidator(outsider))
    );
    let long = "x".repeat(65);
    for name in ["", "V2", "v2 ", "a/b", long.as_str()] {
        assert_eq!(
            run(&mut s, 5, operator(4), &signal(name, 100)),
            Err(UpgradeError::InvalidName(name.into())),
            "{name:?}"
        );
    }
    assert_eq!(
        run(
            &mut s,
            5,
            operator(4),
            &signal("v2", 5 + MIN_UPGRADE_DELAY_BLOCKS - 1)
        ),
        Err(UpgradeError::TooSoon {
            height: 5 + MIN_UPGRADE_DELAY_BLOCKS - 1,
            min: 5 + MIN_UPGRADE_DELAY_BLOCKS,
            now: 5
        })
    );
    assert_eq!(
        run(&mut s, u64::MAX - 1, operator(4), &signal("v2", u64::MAX)),
        Err(UpgradeError::Overflow)
    );
    assert_eq!(
        run(
            &mut s,
            5,
            operator(4),
            &UpgradeMsg::Withdraw(MsgWithdrawSignal {})
        ),
        Err(UpgradeError::NoSignal(operator(4)))
    );
    assert_eq!(s.entries(), &before);
}

#[test]
fn a_withdrawn_signal_no_longer_counts() {
    let mut s = state();
    run(&mut s, 5, operator(4), &signal("v2", 100)).unwrap();
    run(
        &mut s,
        5,
        operator(4),
        &UpgradeMsg::Withdraw(MsgWithdrawSignal {}),
    )
    .unwrap();
    // 30 + 20 + 10 = 60 without validator 4.
    for i in 1..=3 {
        run(&mut s, 5, operator(i), &signal("v2", 100)).unwrap();
    }
    assert_eq!(s.upgrade_plan(), None);
    run(&mut s, 6, operator(4), &signal("v2", 100)).unwrap();
    assert!(s.upgrade_plan().is_some());
}

#[test]
fn an_applied_name_cannot_be_planned_again() {
    let mut s = state();
    let plan = Plan {
        name: "v2".into(),
        height: 20,
    };
    let mut fork = Overlay::new(&s);
    fork.put_upgrade_plan(&plan);
    record_applied(&mut fork, &plan, 20);
    s.apply(fork.into_parts().0);
    assert_eq!(s.upgrade_plan(), None);
    assert_eq!(
        run(&mut s, 30, operator(4), &signal("v2", 100)),
        Err(UpgradeError::AlreadyApplied {
            name: "v2".into(),
            height: 20
        })
    );
}

#[test]
fn begin_block_tells_each_binary_what_to_do() {
    let mut s = state();
    let plan = Plan {
        name: "v2".into(),
        height: 20,
    };
    let old = |_: &str| false;
    let new = |n: &str| n == "v2";
    assert_eq!(begin_block(&s, 19, old), Ok(None));
    let mut fork = Overlay::new(&s);
    fork.put_upgrade_plan(&plan);
    s.apply(fork.into_parts().0);

    // Before the height: the old binary runs on, the new one must not.
    assert_eq!(begin_block(&s, 19, old), Ok(None));
    assert_eq!(
        begin_block(&s, 19, new),
        Err(UpgradeError::TooEarly {
            name: "v2".into(),
            height: 20,
            now: 19
        })
    );
    // At the height: the old binary halts, the new one migrates.
    assert_eq!(
        begin_block(&s, 20, old),
        Err(UpgradeError::Needed {
            name: "v2".into(),
            height: 20
        })
    );
    assert_eq!(begin_block(&s, 20, new), Ok(Some(plan.clone())));
    assert!(matches!(
        begin_block(&s, 21, new),
        Err(UpgradeError::Missed { .. })
    ));

    // After: the old binary refuses the upgraded state, the new one goes on.
    let mut fork = Overlay::new(&s);
    record_applied(&mut fork, &plan, 20);
    s.apply(fork.into_parts().0);
    assert_eq!(
        begin_block(&s, 21, old),
        Err(UpgradeError::UnknownApplied {
            name: "v2".into(),
            height: 20
        })
    );
    assert_eq!(begin_block(&s, 21, new), Ok(None));
}
