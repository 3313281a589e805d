//! Validator and provider penalties end to end on an in-memory state with bank, staking and
//! slashing genesis applied; invariants are checked after every step.

use gpuchain_bank::{BankGenesis, BankParams, BankRead};
use gpuchain_staking::{
    consensus_address, module_account, ConsensusAddress, GenesisProvider, GenesisValidator,
    ProviderAttrs, ProviderClass, StakingGenesis, StakingRead, StakingWrite,
};
use gpuchain_types::{Address, BlockCtx, MemState, ModuleError, Overlay, StateRead};

use super::*;
use crate::{
    handle_commit_info, handle_evidence, slash_provider, Evidence, EvidenceKind, FaultKind,
    MsgUnjail, SlashOutcome, SlashReason, SlashingGenesis, SlashingParams, SlashingRead,
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

fn cons(seed: u8) -> ConsensusAddress {
    consensus_address(&key(seed))
}

fn addr(seed: u8) -> Address {
    Address([seed; 20])
}

fn attrs() -> ProviderAttrs {
    ProviderAttrs {
        class: ProviderClass::Gpu,
        gpu_model: "NVIDIA H200".into(),
        vram_mib: 143_771,
        gpu_count: 1,
        compute_capability: 90,
        driver_version: "550.54.15".into(),
        cuda_version: 12_040,
        region: "eu-west".into(),
        endpoint_url: "https://gpu.example.org".into(),
    }
}

/// Validators 1 and 2 (bond 100 GPU each), provider 3 (bond 2,000 GPU), client 4, prover 5.
struct Chain {
    state: MemState,
}

impl Chain {
    fn new() -> Chain {
        let mut state = MemState::new();
        let mut fork = Overlay::new(&state);
        let balances = (1..=5u8).map(|i| (addr(i), 10_000 * GPU)).collect();
        BankGenesis {
            params: BankParams::default(),
            balances,
        }
        .apply(&mut fork)
        .unwrap();
        let validators = [1u8, 2]
            .iter()
            .map(|&i| GenesisValidator {
                operator: addr(i),
                consensus_pubkey: key(i),
                moniker: format!("v{i}"),
                self_bond: 100 * GPU,
            })
            .collect();
        let providers = vec![GenesisProvider {
            operator: addr(3),
            attrs: attrs(),
            bond: 2_000 * GPU,
        }];
        let staking = StakingGenesis {
            validators,
            providers,
            ..StakingGenesis::default()
        };
        assert_eq!(staking.apply(&mut fork).unwrap().len(), 2);
        SlashingGenesis::default().apply(&mut fork).unwrap();
        let (writes, _) = fork.into_parts();
        state.apply(writes);
        Chain { state }
    }

    fn step<T>(&mut self, f: impl FnOnce(&mut Overlay<'_>) -> T) -> T {
        let mut fork = Overlay::new(&self.state);
        let out = f(&mut fork);
        let (writes, _) = fork.into_parts();
        self.state.apply(writes);
        check_invariants(&self.state);
        out
    }

    fn unjail(&mut self, height: u64, signer: u8) -> Result<(), SlashingError> {
        let msg = SlashingMsg::Unjail(MsgUnjail {});
        let mut fork = Overlay::new(&self.state);
        let result = check_stateless(&msg)
            .and_then(|()| execute(&mut fork, &ctx(height), &addr(signer), &msg));
        if result.is_err() {
            assert!(fork.writes().is_empty(), "failed unjail left writes");
        } else {
            let (writes, _) = fork.into_parts();
            self.state.apply(writes);
        }
        result
    }

    fn bonded(&self, seed: u8) -> u128 {
        self.state.validator(&addr(seed)).unwrap().bonded
    }

    fn end_block(&mut self, height: u64) -> Vec<gpuchain_staking::ValidatorUpdate> {
        self.step(|s| gpuchain_staking::end_block(s, &ctx(height)).unwrap())
    }
}

fn check_invariants(state: &impl StateRead) {
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

#[test]
fn double_sign_also_cuts_self_bond_unbonded_after_the_infraction() {
    use gpuchain_staking::{handler as staking, MsgUnbondValidator, StakingMsg};
    let mut chain = Chain::new();
    let unbond = |amount| StakingMsg::UnbondValidator(MsgUnbondValidator { amount });
    // 20 GPU start unbonding before the infraction (height 5), 40 GPU after it (height 8).
    chain
        .step(|s| staking::execute(s, &ctx(5), &addr(1), &unbond(20 * GPU)))
        .unwrap();
    chain
        .step(|s| staking::execute(s, &ctx(8), &addr(1), &unbond(40 * GPU)))
        .unwrap();
    let evidence = Evidence {
        kind: EvidenceKind::LightClientAttack,
        consensus_address: cons(1),
        height: 7,
    };
    let record = chain
        .step(|s| handle_evidence(s, &ctx(9), &evidence))
        .unwrap()
        .unwrap();
    // 5% of the 40 GPU still bonded plus 5% of the 40 GPU that left after the infraction.
    assert_eq!(record.outcome.slashed, 4 * GPU);
    assert_eq!(chain.bonded(1), 38 * GPU);
    let amounts: Vec<u128> = chain
        .state
        .unbonding_entries_of(&addr(1))
        .iter()
        .map(|e| e.amount)
        .collect();
    assert_eq!(
        amounts,
        vec![20 * GPU, 38 * GPU],
        "the earlier entry is untouched"
    );
    chain.end_block(108);
    assert_eq!(chain.state.balance(&addr(1)), 9_900 * GPU + 58 * GPU);
}

#[test]
fn double_sign_slashes_and_tombstones_once() {
    let mut chain = Chain::new();
    let supply = chain.state.supply();
    let evidence = Evidence {
        kind: EvidenceKind::DuplicateVote,
        consensus_address: cons(1),
        height: 7,
    };
    let record = chain
        .step(|s| handle_evidence(s, &ctx(9), &evidence))
        .unwrap()
        .unwrap();
    assert_eq!(
        record.reason,
        SlashReason::DoubleSign(EvidenceKind::DuplicateVote)
    );
    assert_eq!(record.outcome.slashed, 5 * GPU, "5% of 100 GPU");
    assert_eq!(chain.bonded(1), 95 * GPU);
    assert_eq!(chain.state.supply(), supply - 5 * GPU, "burned");
    let v = chain.state.validator(&addr(1)).unwrap();
    assert!(v.tombstoned && v.jailed);
    let updates = chain.end_block(9);
    assert_eq!(
        updates,
        vec![gpuchain_staking::ValidatorUpdate {
            pubkey: key(1),
            power: 0
        }]
    );

    // Repeated, unknown-validator evidence: no-ops.
    assert_eq!(
        chain.step(|s| handle_evidence(s, &ctx(10), &evidence)),
        Ok(None)
    );
    let unknown = Evidence {
        consensus_address: [9; 20],
        ..evidence
    };
    assert_eq!(
        chain.step(|s| handle_evidence(s, &ctx(10), &unknown)),
        Ok(None)
    );
    assert_eq!(chain.bonded(1), 95 * GPU);
    assert_eq!(chain.state.slash_records_of(&addr(1)).len(), 1);
    assert_eq!(
        chain.unjail(10_000, 1),
        Err(SlashingError::Tombstoned(addr(1)))
    );
}

#[test]
fn downtime_jails_slashes_and_unjails_after_jail_blocks() {
    let mut chain = Chain::new();
    let params = SlashingParams::default();
    // Validator 2 signs everything; validator 1 misses from height 1 on.
    for height in 1..=params.max_missed_blocks {
        let slashes = chain
            .step(|s| handle_commit_info(s, &ctx(height), &[(cons(1), false), (cons(2), true)]))
            .unwrap();
        assert!(slashes.is_empty(), "{height}: 50 misses are still allowed");
    }
    assert_eq!(chain.state.signing_info(&cons(1)).unwrap().missed, 50);
    let h = params.max_missed_blocks + 1;
    let slashes = chain
        .step(|s| handle_commit_info(s, &ctx(h), &[(cons(1), false), (cons(2), true)]))
        .unwrap();
    assert_eq!(slashes.len(), 1);
    assert_eq!(slashes[0].outcome.slashed, 100 * GPU / 1_000, "0.1%");
    assert_eq!(slashes[0].jailed_until, h + params.jail_blocks);
    assert_eq!(
        chain.state.signing_info(&cons(1)).unwrap().missed,
        0,
        "window reset"
    );
    let v = chain.state.validator(&addr(1)).unwrap();
    assert!(v.jailed && !v.tombstoned);
    assert_eq!(
        chain.end_block(h),
        vec![gpuchain_staking::ValidatorUpdate {
            pubkey: key(1),
            power: 0
        }]
    );
    assert_eq!(chain.state.signing_info(&cons(2)).unwrap().missed, 0);

    // Jailed validators' votes are ignored.
    chain
        .step(|s| handle_commit_info(s, &ctx(h + 1), &[(cons(1), false)]))
        .unwrap();
    assert_eq!(chain.state.signing_info(&cons(1)).unwrap().missed, 0);

    let until = h + params.jail_blocks;
    assert_eq!(
        chain.unjail(until - 1, 1),
        Err(SlashingError::StillJailed {
            until,
            height: until - 1
        })
    );
    assert_eq!(
        chain.unjail(until, 2),
        Err(SlashingError::NotJailed(addr(2)))
    );
    assert_eq!(
        chain.unjail(until, 4),
        Err(SlashingError::NotAValidator(addr(4)))
    );
    chain.unjail(until, 1).unwrap();
    assert_eq!(
        chain.end_block(until),
        vec![gpuchain_staking::ValidatorUpdate {
            pubkey: key(1),
            power: 99
        }],
        "back with its slashed bond (99.9 GPU)"
    );
}

#[test]
fn unjail_needs_the_minimum_self_bond() {
    let mut chain = Chain::new();
    chain.step(|s| {
        let mut v = s.validator(&addr(1)).unwrap();
        let excess = v.bonded - GPU + 1;
        v.bonded -= excess;
        v.jailed = true;
        v.jailed_until = 5;
        s.put_validator(&v);
        gpuchain_bank::BankWrite::transfer(s, &module_account::bonded_pool(), &addr(1), excess)
            .unwrap();
    });
    assert_eq!(
        chain.unjail(5, 1),
        Err(SlashingError::BelowMinSelfBond {
            bond: GPU - 1,
            min: GPU
        })
    );
}

#[test]
fn provider_slash_splits_exactly_and_jails() {
    let mut chain = Chain::new();
    let supply = chain.state.supply();
    let (client_before, prover_before) =
        (chain.state.balance(&addr(4)), chain.state.balance(&addr(5)));
    let outcome = chain
        .step(|s| {
            slash_provider(
                s,
                &ctx(20),
                &addr(3),
                FaultKind::WrongResult,
                &addr(4),
                Some(&addr(5)),
                None,
            )
        })
        .unwrap();
    assert_eq!(
        outcome,
        SlashOutcome {
            slashed: 600 * GPU,
            to_costs: 0,
            to_client: 300 * GPU,
            to_prover: 180 * GPU,
            burned: 120 * GPU
        }
    );
    assert_eq!(chain.state.balance(&addr(4)), client_before + 300 * GPU);
    assert_eq!(chain.state.balance(&addr(5)), prover_before + 180 * GPU);
    assert_eq!(chain.state.supply(), supply - 120 * GPU);
    let provider = chain.state.provider(&addr(3)).unwrap();
    assert_eq!(provider.bonded, 1_400 * GPU);
    assert_eq!(provider.jailed_until, 1_020);
    assert!(
        !chain.state.is_eligible_provider(&addr(3), 1_019),
        "jailed providers cannot bid"
    );
    assert!(chain.state.is_eligible_provider(&addr(3), 1_020));

    // No prover: its share is burned; nor does the client get a share of an abandoned lease,
    // which it may have caused. 2% of 1,400 GPU = 28 GPU, all burned.
    let outcome = chain
        .step(|s| {
            slash_provider(
                s,
                &ctx(30),
                &addr(3),
                FaultKind::AbandonedLease,
                &addr(4),
                None,
                None,
            )
        })
        .unwrap();
    assert_eq!(
        outcome,
        SlashOutcome {
            slashed: 28 * GPU,
            to_costs: 0,
            to_client: 0,
            to_prover: 0,
            burned: 28 * GPU
        }
    );
    let records = chain.state.slash_records_of(&addr(3));
    assert_eq!(records.len(), 2);
    assert_eq!(
        records[1].reason,
        SlashReason::Provider(FaultKind::AbandonedLease)
    );
    assert_eq!(records[1].jailed_until, 1_030);
    assert_eq!(
        chain.state.slash_record(records[0].id),
        Some(records[0].clone())
    );

    let mut fork = Overlay::new(&chain.state);
    let err = slash_provider(
        &mut fork,
        &ctx(31),
        &addr(9),
        FaultKind::MissedDeadline,
        &addr(4),
        None,
        None,
    );
    assert_eq!(err, Err(SlashingError::UnknownProvider(addr(9))));
    assert!(fork.writes().is_empty());
}

#[test]
fn error_codes_are_unique_and_non_zero() {
    let all = [
        SlashingError::NotAValidator(addr(1)),
        SlashingError::NotJailed(addr(1)),
        SlashingError::StillJailed {
            until: 0,
            height: 0,
        },
        SlashingError::Tombstoned(addr(1)),
        SlashingError::BelowMinSelfBond { bond: 0, min: 0 },
        SlashingError::UnknownProvider(addr(1)),
        SlashingError::Overflow,
        SlashingError::InvalidParams(String::new()),
        SlashingError::PoolShortfall {
            available: 0,
            required: 0,
        },
        SlashingError::Bank(gpuchain_bank::BankError::Overflow),
    ];
    let codes: std::collections::BTreeSet<u32> = all.iter().map(|e| e.code()).collect();
    assert_eq!(codes.len(), all.len());
    assert!(!codes.contains(&0));
    let bad = SlashingParams {
        client_share_ppm: 800_000,
        ..SlashingParams::default()
    };
    assert!(matches!(
        bad.validate(),
        Err(SlashingError::InvalidParams(_))
    ));
}
