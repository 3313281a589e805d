//! A seeded simulation of staking and slashing together: random weighted operations (a
//! failing one must leave no writes and is otherwise a no-op), an end-block after each
//! round, and invariants checked after every block. Then a quiet phase in which every queued
//! unbonding must be paid out. The seed is printed on failure; set `GPUCHAIN_SIM_SEEDS` to
//! run more seeds.

use gpuchain_bank::{BankGenesis, BankParams, BankRead};
use gpuchain_staking::{
    consensus_address, handler as staking, module_account, MsgBondProvider, MsgCreateValidator,
    MsgDelegateSelf, MsgDeregisterProvider, MsgEditValidator, MsgRegisterProvider,
    MsgUnbondProvider, MsgUnbondValidator, ProviderAttrs, ProviderClass, StakingGenesis,
    StakingMsg, StakingParams, StakingRead, StakingWrite,
};
use gpuchain_types::{Address, BlockCtx, MemState, Overlay};

use crate::{
    handle_commit_info, handle_evidence, handler, slash_provider, Evidence, EvidenceKind,
    FaultKind, MsgUnjail, SlashingGenesis, SlashingMsg, SlashingParams, SlashingRead,
};

const GPU: u128 = 1_000_000;
const ACCOUNTS: u8 = 8;

/// splitmix64: a tiny deterministic generator for tests only.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn account(&mut self) -> Address {
        Address([1 + u8::try_from(self.below(u64::from(ACCOUNTS))).unwrap(); 20])
    }

    fn amount(&mut self, max_gpu: u64) -> u128 {
        u128::from(self.below(max_gpu * 1_000)) * 1_000
    }
}

fn key(seed: u8) -> [u8; 32] {
    ed25519_dalek::SigningKey::from_bytes(&[seed; 32])
        .verifying_key()
        .to_bytes()
}

fn attrs(rng: &mut Rng) -> ProviderAttrs {
    ProviderAttrs {
        class: ProviderClass::Gpu,
        gpu_model: ["NVIDIA H200", "NVIDIA A100"][usize::from(rng.below(2) == 1)].into(),
        vram_mib: 40_960 + rng.below(100_000),
        gpu_count: 1 + u32::try_from(rng.below(8)).unwrap(),
        compute_capability: 80,
        driver_version: "550.54.15".into(),
        cuda_version: 12_040,
        region: "eu".into(),
        endpoint_url: "https://p.example".into(),
    }
}

fn ctx(height: u64) -> BlockCtx {
    BlockCtx {
        height,
        chain_id: "sim".into(),
        entropy: [0; 32],
        time_ms: height.saturating_mul(1_000),
    }
}

struct Sim {
    state: MemState,
    initial_supply: u128,
    params: StakingParams,
    /// Operations that succeeded and failed, to show the run exercised both.
    outcomes: (u64, u64),
}

impl Sim {
    fn new() -> Sim {
        let mut state = MemState::new();
        let mut fork = Overlay::new(&state);
        let balances = (1..=ACCOUNTS)
            .map(|i| (Address([i; 20]), 5_000 * GPU))
            .collect();
        BankGenesis {
            params: BankParams::default(),
            balances,
        }
        .apply(&mut fork)
        .unwrap();
        let params = StakingParams {
            max_validators: 3,
            unbonding_blocks: 5,
            min_provider_stake: 100 * GPU,
            ..StakingParams::default()
        };
        StakingGenesis {
            params: params.clone(),
            ..StakingGenesis::default()
        }
        .apply(&mut fork)
        .unwrap();
        let slashing = SlashingParams {
            signed_blocks_window: 10,
            max_missed_blocks: 4,
            jail_blocks: 3,
            provider_jail_blocks: 4,
            ..SlashingParams::default()
        };
        SlashingGenesis { params: slashing }
            .apply(&mut fork)
            .unwrap();
        let (writes, _) = fork.into_parts();
        state.apply(writes);
        let initial_supply = state.supply();
        Sim {
            state,
            initial_supply,
            params,
            outcomes: (0, 0),
        }
    }

    /// Runs `op` on a fork; keeps its writes only if it succeeded.
    fn try_op<E: std::fmt::Debug>(&mut self, op: impl FnOnce(&mut Overlay<'_>) -> Result<(), E>) {
        let mut fork = Overlay::new(&self.state);
        if op(&mut fork).is_ok() {
            let (writes, _) = fork.into_parts();
            self.state.apply(writes);
            self.outcomes.0 += 1;
        } else {
            self.outcomes.1 += 1;
            assert!(fork.writes().is_empty(), "a failed operation left writes");
        }
    }

    fn random_op(&mut self, rng: &mut Rng, height: u64) {
        let who = rng.account();
        let c = ctx(height);
        let msg = match rng.below(14) {
            0 | 1 => StakingMsg::CreateValidator(MsgCreateValidator {
                consensus_pubkey: key(1 + u8::try_from(rng.below(12)).unwrap()),
                moniker: "sim".into(),
                self_bond: rng.amount(300),
            }),
            2 => StakingMsg::DelegateSelf(MsgDelegateSelf {
                amount: rng.amount(100),
            }),
            3 => StakingMsg::UnbondValidator(MsgUnbondValidator {
                amount: rng.amount(200),
            }),
            4 => StakingMsg::EditValidator(MsgEditValidator {
                moniker: "renamed".into(),
            }),
            5 => StakingMsg::RegisterProvider(MsgRegisterProvider {
                attrs: attrs(rng),
                bond: rng.amount(400),
            }),
            6 => StakingMsg::BondProvider(MsgBondProvider {
                amount: rng.amount(100),
            }),
            7 => StakingMsg::UnbondProvider(MsgUnbondProvider {
                amount: rng.amount(300),
            }),
            8 => StakingMsg::DeregisterProvider(MsgDeregisterProvider {}),
            9 => {
                let open = rng.below(2) == 0;
                return self.try_op(|s| {
                    if open {
                        s.increment_open_leases(&who).map(|_| ())
                    } else {
                        s.decrement_open_leases(&who).map(|_| ())
                    }
                });
            }
            10 => {
                let fault = [
                    FaultKind::WrongResult,
                    FaultKind::MissedDeadline,
                    FaultKind::AbandonedLease,
                ][usize::try_from(rng.below(3)).unwrap()];
                let (client, prover) = (rng.account(), rng.account());
                let with_prover = rng.below(2) == 0;
                return self.try_op(|s| {
                    let prover = with_prover.then_some(&prover);
                    slash_provider(s, &c, &who, fault, &client, prover, None).map(|_| ())
                });
            }
            11 => {
                let evidence = Evidence {
                    kind: EvidenceKind::DuplicateVote,
                    consensus_address: consensus_address(&key(
                        1 + u8::try_from(rng.below(12)).unwrap()
                    )),
                    height: height.saturating_sub(rng.below(3)),
                };
                // Rare: only one draw in four actually reports.
                if rng.below(4) != 0 {
                    return;
                }
                return self.try_op(|s| handle_evidence(s, &c, &evidence).map(|_| ()));
            }
            12 => {
                let msg = SlashingMsg::Unjail(MsgUnjail {});
                return self.try_op(|s| handler::execute(s, &c, &who, &msg));
            }
            _ => return,
        };
        let params = self.params.clone();
        self.try_op(|s| {
            staking::check_stateless(&msg, &params)?;
            staking::execute(s, &c, &who, &msg)
        });
    }

    fn end_block(&mut self, rng: &mut Rng, height: u64, sign_all: bool) {
        let votes: Vec<_> = self
            .state
            .active_set()
            .iter()
            .map(|m| (consensus_address(&m.pubkey), sign_all || rng.below(3) != 0))
            .collect();
        let mut fork = Overlay::new(&self.state);
        handle_commit_info(&mut fork, &ctx(height), &votes).unwrap();
        gpuchain_staking::end_block(&mut fork, &ctx(height)).unwrap();
        let (writes, _) = fork.into_parts();
        self.state.apply(writes);
        self.check(height);
    }

    fn check(&self, height: u64) {
        let s = &self.state;
        let balances: u128 = s.all_balances().into_iter().map(|(_, a)| a).sum();
        assert_eq!(balances, s.supply(), "h{height}: balances == supply");
        let bonds: u128 = s.validators().iter().map(|v| v.bonded).sum::<u128>()
            + s.providers().iter().map(|p| p.bonded).sum::<u128>();
        assert_eq!(
            s.balance(&module_account::bonded_pool()),
            bonds,
            "h{height}: bonded pool"
        );
        let queued: u128 = s.unbonding_entries().iter().map(|e| e.amount).sum();
        assert_eq!(
            s.balance(&module_account::unbonding_pool()),
            queued,
            "h{height}: unbonding"
        );
        let records = s.slash_records();
        for r in &records {
            let o = r.outcome;
            assert_eq!(
                o.to_client + o.to_prover + o.burned,
                o.slashed,
                "h{height}: split"
            );
        }
        let burned: u128 = records.iter().map(|r| r.outcome.burned).sum();
        assert_eq!(
            self.initial_supply - s.supply(),
            burned,
            "h{height}: only slashes burn"
        );
        let active = s.active_set();
        assert!(active.len() <= 3, "h{height}: max_validators");
        // Every member is a live candidate, unless none exists: then the previous set is
        // kept, because CometBFT halts on an empty validator set.
        let candidates = s
            .validators()
            .into_iter()
            .filter(|v| v.is_active_candidate() && v.power(self.params.power_reduction) > 0)
            .count();
        for m in &active {
            let v = s.validator(&m.operator).unwrap();
            let live = v.is_active_candidate() && v.power(self.params.power_reduction) > 0;
            assert!(live || candidates == 0, "h{height}: {v:?} is active");
        }
    }
}

/// Runs one seed; returns (succeeded, failed, slash records, validators ever created).
fn run(seed: u64) -> (u64, u64, usize, usize) {
    let mut rng = Rng(seed);
    let mut sim = Sim::new();
    let mut height = 1;
    for _ in 0..150 {
        for _ in 0..rng.below(6) {
            sim.random_op(&mut rng, height);
        }
        sim.end_block(&mut rng, height, false);
        height += 1;
    }
    // Quiet phase: close all leases, unbond everything, let the queue drain.
    for v in sim.state.validators() {
        if v.bonded > 0 {
            let msg = StakingMsg::UnbondValidator(MsgUnbondValidator { amount: v.bonded });
            sim.try_op(|s| staking::execute(s, &ctx(height), &v.operator, &msg));
        }
    }
    for p in sim.state.providers() {
        sim.try_op(|s| {
            while s.open_leases(&p.operator) > 0 {
                s.decrement_open_leases(&p.operator)?;
            }
            Ok::<(), gpuchain_staking::StakingError>(())
        });
        let msg = StakingMsg::DeregisterProvider(MsgDeregisterProvider {});
        sim.try_op(|s| staking::execute(s, &ctx(height.max(p.jailed_until)), &p.operator, &msg));
    }
    let last = height + 2 * 5 + 10;
    while height <= last {
        sim.end_block(&mut rng, height, true);
        height += 1;
    }
    assert!(
        sim.state.unbonding_entries().is_empty(),
        "every unbonding was paid out"
    );
    assert_eq!(sim.state.balance(&module_account::unbonding_pool()), 0);
    assert_eq!(
        sim.state.balance(&module_account::bonded_pool()),
        0,
        "everything unbonded"
    );
    let (ok, failed) = sim.outcomes;
    (
        ok,
        failed,
        sim.state.slash_records().len(),
        sim.state.validators().len(),
    )
}

#[test]
fn random_operations_keep_every_invariant() {
    let seeds: u64 = std::env::var("GPUCHAIN_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let mut totals = (0, 0, 0, 0);
    for seed in 0..seeds {
        let result = std::panic::catch_unwind(|| run(seed));
        let Ok((ok, failed, slashes, validators)) = result else {
            panic!("simulation failed with seed {seed}");
        };
        totals = (
            totals.0 + ok,
            totals.1 + failed,
            totals.2 + slashes,
            totals.3 + validators,
        );
    }
    let (ok, failed, slashes, validators) = totals;
    eprintln!(
        "{seeds} seeds: {ok} ops ok, {failed} refused, {slashes} slashes, {validators} validators"
    );
    assert!(
        ok > 50 * seeds
            && failed > 50 * seeds
            && slashes > 2 * seeds as usize
            && validators >= seeds as usize
    );
}
