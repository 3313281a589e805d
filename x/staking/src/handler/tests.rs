use gpuchain_bank::{BankGenesis, BankParams, BankRead};
use gpuchain_types::{Address, BlockCtx, MemState, ModuleError, Overlay, StateRead};

use super::*;
use crate::validation::tests::h200;
use crate::{
    end_block, module_account, MsgBondProvider, MsgCreateValidator, MsgDelegateSelf,
    MsgDeregisterProvider, MsgEditValidator, MsgRegisterProvider, MsgUnbondProvider,
    MsgUnbondValidator, MsgUpdateProvider, ProviderFilter, StakingGenesis, StakingRead,
    StakingWrite, ValidatorUpdate,
};

const GPU: u128 = 1_000_000;

fn ctx(height: u64) -> BlockCtx {
    BlockCtx {
        height,
        chain_id: "test".into(),
        entropy: [0; 32],
        time_ms: height.saturating_mul(1_000),
    }
}

fn key(seed: u8) -> [u8; 32] {
    ed25519_dalek::SigningKey::from_bytes(&[seed; 32])
        .verifying_key()
        .to_bytes()
}

/// A state with funded accounts 1..=5 and default params except `max_validators`.
struct Chain {
    state: MemState,
}

impl Chain {
    fn new(max_validators: u32) -> Chain {
        let mut state = MemState::new();
        let mut fork = Overlay::new(&state);
        let balances = (1..=5u8)
            .map(|i| (Address([i; 20]), 10_000 * GPU))
            .collect();
        BankGenesis {
            params: BankParams::default(),
            balances,
        }
        .apply(&mut fork)
        .unwrap();
        let params = StakingParams {
            max_validators,
            ..StakingParams::default()
        };
        StakingGenesis {
            params,
            ..StakingGenesis::default()
        }
        .apply(&mut fork)
        .unwrap();
        let (writes, _) = fork.into_parts();
        state.apply(writes);
        Chain { state }
    }

    /// Runs one message; on failure asserts that the fork holds no writes.
    fn run(&mut self, height: u64, signer: u8, msg: StakingMsg) -> Result<(), StakingError> {
        let signer = Address([signer; 20]);
        let mut fork = Overlay::new(&self.state);
        let result = check_stateless(&msg, &fork.staking_params())
            .and_then(|()| execute(&mut fork, &ctx(height), &signer, &msg));
        if result.is_err() {
            assert!(fork.writes().is_empty(), "failed {msg:?} left writes");
        }
        let (writes, _) = fork.into_parts();
        if result.is_ok() {
            self.state.apply(writes);
        }
        check_invariants(&self.state);
        result
    }

    fn end_block(&mut self, height: u64) -> Vec<ValidatorUpdate> {
        let mut fork = Overlay::new(&self.state);
        let updates = end_block(&mut fork, &ctx(height)).unwrap();
        let (writes, _) = fork.into_parts();
        self.state.apply(writes);
        check_invariants(&self.state);
        updates
    }

    fn edit(&mut self, f: impl FnOnce(&mut Overlay<'_>)) {
        let mut fork = Overlay::new(&self.state);
        f(&mut fork);
        let (writes, _) = fork.into_parts();
        self.state.apply(writes);
    }

    fn balance(&self, who: u8) -> u128 {
        self.state.balance(&Address([who; 20]))
    }
}

/// Supply is conserved, the bonded pool backs every bond and the unbonding pool every entry.
pub(crate) fn check_invariants(state: &impl StateRead) {
    let balances: u128 = state.all_balances().into_iter().map(|(_, a)| a).sum();
    assert_eq!(balances, state.supply(), "sum of balances == supply");
    let bonds: u128 = state.validators().iter().map(|v| v.bonded).sum::<u128>()
        + state.providers().iter().map(|p| p.bonded).sum::<u128>();
    assert_eq!(
        state.balance(&module_account::bonded_pool()),
        bonds,
        "bonded pool == bonds"
    );
    let queued: u128 = state.unbonding_entries().iter().map(|e| e.amount).sum();
    assert_eq!(
        state.balance(&module_account::unbonding_pool()),
        queued,
        "unbonding pool == queue"
    );
}

fn create(seed: u8, self_bond: u128) -> StakingMsg {
    StakingMsg::CreateValidator(MsgCreateValidator {
        consensus_pubkey: key(seed),
        moniker: format!("v{seed}"),
        self_bond,
    })
}

fn update(seed: u8, power: u64) -> ValidatorUpdate {
    ValidatorUpdate {
        pubkey: key(seed),
        power,
    }
}

fn sorted(mut updates: Vec<ValidatorUpdate>) -> Vec<ValidatorUpdate> {
    updates.sort_by_key(|u| crate::consensus_address(&u.pubkey));
    updates
}

#[test]
fn validator_bonds_and_unbonds_through_the_queue() {
    let mut chain = Chain::new(50);
    chain.run(1, 1, create(1, 3 * GPU)).unwrap();
    assert_eq!(chain.balance(1), 9_997 * GPU);
    assert_eq!(chain.end_block(1), vec![update(1, 3)]);
    chain
        .run(
            2,
            1,
            StakingMsg::DelegateSelf(MsgDelegateSelf { amount: GPU }),
        )
        .unwrap();
    assert_eq!(chain.end_block(2), vec![update(1, 4)]);
    chain
        .run(
            10,
            1,
            StakingMsg::UnbondValidator(MsgUnbondValidator { amount: 2 * GPU }),
        )
        .unwrap();
    let entries = chain.state.unbonding_entries_of(&Address([1; 20]));
    assert_eq!(entries.len(), 1);
    assert_eq!(
        (entries[0].amount, entries[0].completion_height),
        (2 * GPU, 110)
    );
    assert_eq!(chain.end_block(10), vec![update(1, 2)]);
    assert_eq!(chain.end_block(109), vec![]);
    assert_eq!(
        chain.balance(1),
        9_996 * GPU,
        "not released before completion"
    );
    chain.end_block(110);
    assert_eq!(
        chain.balance(1),
        9_998 * GPU,
        "released at completion height"
    );
    assert!(chain.state.unbonding_entries().is_empty());
    chain
        .run(
            111,
            1,
            StakingMsg::EditValidator(MsgEditValidator {
                moniker: "new".into(),
            }),
        )
        .unwrap();
    assert_eq!(
        chain.state.validator(&Address([1; 20])).unwrap().moniker,
        "new"
    );
}

#[test]
fn end_block_caps_the_set_and_removes_jailed_and_unbonded_validators() {
    let mut chain = Chain::new(2);
    chain.run(1, 1, create(1, 5 * GPU)).unwrap();
    chain.run(1, 2, create(2, 3 * GPU)).unwrap();
    chain.run(1, 3, create(3, 3 * GPU)).unwrap();
    // 2 and 3 tie at power 3: the lower consensus address wins the last seat.
    let (tie_winner, tie_loser) =
        if crate::consensus_address(&key(2)) < crate::consensus_address(&key(3)) {
            (2, 3)
        } else {
            (3, 2)
        };
    assert_eq!(
        chain.end_block(1),
        sorted(vec![update(1, 5), update(tie_winner, 3)])
    );
    assert_eq!(chain.end_block(2), vec![], "no change, no updates");

    chain.edit(|s| {
        let mut v = s.validator(&Address([1; 20])).unwrap();
        v.jailed = true;
        s.put_validator(&v);
    });
    assert_eq!(
        chain.end_block(3),
        sorted(vec![update(1, 0), update(tie_loser, 3)])
    );

    let unbond_all = StakingMsg::UnbondValidator(MsgUnbondValidator { amount: 3 * GPU });
    chain.run(4, tie_loser, unbond_all).unwrap();
    assert_eq!(chain.end_block(4), vec![update(tie_loser, 0)]);
    let active: Vec<u64> = chain.state.active_set().iter().map(|m| m.power).collect();
    assert_eq!(active, vec![3]);
}

#[test]
fn end_block_never_empties_the_set() {
    let mut chain = Chain::new(5);
    chain.run(1, 1, create(1, 2 * GPU)).unwrap();
    assert_eq!(chain.end_block(1), vec![update(1, 2)]);
    chain
        .run(
            2,
            1,
            StakingMsg::UnbondValidator(MsgUnbondValidator { amount: 2 * GPU }),
        )
        .unwrap();
    assert_eq!(chain.end_block(2), vec![], "CometBFT halts on an empty set");
    assert_eq!(chain.state.active_set().len(), 1);
}

fn register(bond: u128) -> StakingMsg {
    StakingMsg::RegisterProvider(MsgRegisterProvider {
        attrs: h200(),
        bond,
    })
}

#[test]
fn provider_lifecycle_with_open_leases() {
    let mut chain = Chain::new(50);
    let p = Address([4; 20]);
    let min = StakingParams::default().min_provider_stake;
    chain.run(1, 4, register(min)).unwrap();
    assert!(chain.state.is_eligible_provider(&p, 1));
    let mut attrs = h200();
    attrs.region = "us-east".into();
    chain
        .run(
            2,
            4,
            StakingMsg::UpdateProvider(MsgUpdateProvider { attrs }),
        )
        .unwrap();
    let filter = ProviderFilter {
        region: Some("us-east".into()),
        min_vram_mib: Some(80_000),
        ..Default::default()
    };
    assert_eq!(chain.state.providers_matching(&filter).len(), 1);
    let filter = ProviderFilter {
        gpu_model: Some("nvidia a100".into()),
        ..Default::default()
    };
    assert!(chain.state.providers_matching(&filter).is_empty());

    chain
        .run(
            3,
            4,
            StakingMsg::BondProvider(MsgBondProvider { amount: 100 * GPU }),
        )
        .unwrap();
    chain.edit(|s| assert_eq!(s.increment_open_leases(&p), Ok(1)));
    // With a lease open, nothing may be unbonded, not even the excess over the minimum:
    // the lease can still end in a slash of the whole bond's share.
    for amount in [GPU, 100 * GPU, 101 * GPU] {
        let err = chain
            .run(
                4,
                4,
                StakingMsg::UnbondProvider(MsgUnbondProvider { amount }),
            )
            .unwrap_err();
        assert_eq!(err, StakingError::UnbondWithOpenLeases { open_leases: 1 });
        assert_eq!(err.code(), 23);
    }
    let dereg = StakingMsg::DeregisterProvider(MsgDeregisterProvider {});
    assert_eq!(chain.run(5, 4, dereg.clone()).unwrap_err().code(), 22);

    chain.edit(|s| assert_eq!(s.decrement_open_leases(&p), Ok(0)));
    chain.edit(|s| {
        assert_eq!(
            s.decrement_open_leases(&p),
            Err(StakingError::NoOpenLeases(p))
        )
    });
    // With no lease open, the whole excess and more may go.
    chain
        .run(
            6,
            4,
            StakingMsg::UnbondProvider(MsgUnbondProvider { amount: 101 * GPU }),
        )
        .unwrap();
    assert!(
        !chain.state.is_eligible_provider(&p, 6),
        "below the minimum"
    );
    chain
        .run(
            6,
            4,
            StakingMsg::BondProvider(MsgBondProvider { amount: GPU }),
        )
        .unwrap();
    chain.edit(|s| {
        let mut provider = s.provider(&p).unwrap();
        provider.jailed_until = 20;
        s.put_provider(&provider);
    });
    assert!(!chain.state.is_eligible_provider(&p, 19), "jailed");
    assert_eq!(chain.run(7, 4, dereg.clone()).unwrap_err().code(), 28);
    assert!(chain.state.is_eligible_provider(&p, 20), "jail over");
    chain.run(20, 4, dereg).unwrap();
    assert!(chain.state.provider(&p).is_none());
    assert!(!chain.state.is_eligible_provider(&p, 20));
    let queued: u128 = chain
        .state
        .unbonding_entries_of(&p)
        .iter()
        .map(|e| e.amount)
        .sum();
    assert_eq!(queued, min + 100 * GPU + GPU);
    chain.end_block(120);
    assert_eq!(
        chain.balance(4),
        10_000 * GPU,
        "everything back after unbonding"
    );
}

#[test]
fn each_bad_message_has_its_own_error_and_changes_nothing() {
    let mut chain = Chain::new(50);
    chain.run(1, 1, create(1, 2 * GPU)).unwrap();
    chain.run(1, 4, register(1_000 * GPU)).unwrap();
    let min = StakingParams::default().min_provider_stake;
    let mut cpu_with_gpu = h200();
    cpu_with_gpu.class = crate::ProviderClass::Cpu;
    let cases: Vec<(u8, StakingMsg, StakingError)> = vec![
        (2, create(2, 0), StakingError::ZeroAmount),
        (
            2,
            create(2, 20_000 * GPU),
            StakingError::InsufficientFunds {
                address: Address([2; 20]),
                available: 10_000 * GPU,
                required: 20_000 * GPU,
            },
        ),
        (
            2,
            StakingMsg::CreateValidator(MsgCreateValidator {
                consensus_pubkey: [0; 32],
                moniker: "x".into(),
                self_bond: GPU,
            }),
            StakingError::InvalidConsensusKey,
        ),
        (
            1,
            create(2, GPU),
            StakingError::ValidatorExists(Address([1; 20])),
        ),
        (
            2,
            create(1, GPU),
            StakingError::ConsensusKeyInUse(hex::encode(crate::consensus_address(&key(1)))),
        ),
        (
            2,
            create(2, GPU - 1),
            StakingError::BelowMinSelfBond {
                bond: GPU - 1,
                min: GPU,
            },
        ),
        (
            2,
            StakingMsg::DelegateSelf(MsgDelegateSelf { amount: 1 }),
            StakingError::NotAValidator(Address([2; 20])),
        ),
        (
            1,
            StakingMsg::UnbondValidator(MsgUnbondValidator { amount: 3 * GPU }),
            StakingError::InsufficientBond {
                bonded: 2 * GPU,
                requested: 3 * GPU,
            },
        ),
        (
            1,
            StakingMsg::UnbondValidator(MsgUnbondValidator { amount: GPU + 1 }),
            StakingError::BelowMinSelfBond {
                bond: GPU - 1,
                min: GPU,
            },
        ),
        (
            1,
            StakingMsg::EditValidator(MsgEditValidator {
                moniker: String::new(),
            }),
            StakingError::MonikerLength { len: 0, max: 64 },
        ),
        (
            1,
            StakingMsg::EditValidator(MsgEditValidator {
                moniker: "a\tb".into(),
            }),
            StakingError::BadCharacters { field: "moniker" },
        ),
        (
            5,
            StakingMsg::RegisterProvider(MsgRegisterProvider {
                attrs: cpu_with_gpu,
                bond: min,
            }),
            StakingError::CpuWithGpuAttrs,
        ),
        (
            4,
            register(min),
            StakingError::ProviderExists(Address([4; 20])),
        ),
        (
            5,
            register(min - 1),
            StakingError::BelowMinProviderStake { bond: min - 1, min },
        ),
        (
            5,
            StakingMsg::BondProvider(MsgBondProvider { amount: 1 }),
            StakingError::NotAProvider(Address([5; 20])),
        ),
        (
            4,
            StakingMsg::UnbondProvider(MsgUnbondProvider { amount: min + 1 }),
            StakingError::InsufficientBond {
                bonded: min,
                requested: min + 1,
            },
        ),
    ];
    for (signer, msg, expected) in cases {
        assert_eq!(chain.run(2, signer, msg.clone()), Err(expected), "{msg:?}");
    }
    // Tombstoned validators may not bond more.
    chain.edit(|s| {
        let mut v = s.validator(&Address([1; 20])).unwrap();
        v.tombstoned = true;
        s.put_validator(&v);
    });
    assert_eq!(
        chain.run(
            3,
            1,
            StakingMsg::DelegateSelf(MsgDelegateSelf { amount: GPU })
        ),
        Err(StakingError::ValidatorTombstoned(Address([1; 20])))
    );
}

#[test]
fn error_codes_are_unique_and_non_zero() {
    let a = Address([1; 20]);
    let all = [
        StakingError::ZeroAmount,
        StakingError::InsufficientFunds {
            address: a,
            available: 0,
            required: 0,
        },
        StakingError::InvalidConsensusKey,
        StakingError::ValidatorExists(a),
        StakingError::ConsensusKeyInUse(String::new()),
        StakingError::BelowMinSelfBond { bond: 0, min: 0 },
        StakingError::NotAValidator(a),
        StakingError::InsufficientBond {
            bonded: 0,
            requested: 0,
        },
        StakingError::ValidatorTombstoned(a),
        StakingError::MonikerLength { len: 0, max: 0 },
        StakingError::BadCharacters { field: "" },
        StakingError::AttrLength {
            field: "",
            len: 0,
            min: 0,
            max: 0,
        },
        StakingError::GpuCount { got: 0, max: 0 },
        StakingError::CpuWithGpuAttrs,
        StakingError::ZeroVram,
        StakingError::ComputeCapability(0),
        StakingError::CudaVersion(0),
        StakingError::BadEndpointUrl,
        StakingError::ProviderExists(a),
        StakingError::NotAProvider(a),
        StakingError::BelowMinProviderStake { bond: 0, min: 0 },
        StakingError::ProviderHasOpenLeases {
            provider: a,
            open_leases: 0,
        },
        StakingError::UnbondWithOpenLeases { open_leases: 0 },
        StakingError::NoOpenLeases(a),
        StakingError::Overflow,
        StakingError::InvalidParams(String::new()),
        StakingError::Bank(gpuchain_bank::BankError::Overflow),
        StakingError::ProviderJailed {
            provider: a,
            until: 0,
        },
    ];
    let codes: std::collections::BTreeSet<u32> = all.iter().map(|e| e.code()).collect();
    assert_eq!(codes.len(), all.len());
    assert!(!codes.contains(&0));
    assert!(all.iter().all(|e| e.codespace() == "staking"));
}

#[test]
fn genesis_bonds_from_balances_and_returns_the_initial_set() {
    let mut state = MemState::new();
    let mut fork = Overlay::new(&state);
    let (a, b) = (Address([1; 20]), Address([2; 20]));
    BankGenesis {
        params: BankParams::default(),
        balances: vec![(a, 10 * GPU), (b, 2_000 * GPU)],
    }
    .apply(&mut fork)
    .unwrap();
    let genesis: StakingGenesis = serde_json::from_value(serde_json::json!({
        "validators": [{
            "operator": a.to_string(),
            "consensus_pubkey": hex::encode(key(1)),
            "moniker": "genesis-1",
            "self_bond": 4 * GPU,
        }],
        "providers": [{ "operator": b.to_string(), "attrs": serde_json::to_value(h200()).unwrap(), "bond": 1_000 * GPU }],
    }))
    .unwrap();
    assert_eq!(genesis.apply(&mut fork), Ok(vec![update(1, 4)]));
    let (writes, _) = fork.into_parts();
    state.apply(writes);
    check_invariants(&state);
    assert_eq!(state.balance(&a), 6 * GPU);
    assert!(state.is_eligible_provider(&b, 0));

    let mut short = genesis.clone();
    short.validators[0].self_bond = 11 * GPU;
    let base = MemState::new();
    let mut fork = Overlay::new(&base);
    assert!(matches!(
        short.apply(&mut fork),
        Err(StakingError::InsufficientFunds { .. })
    ));
}
