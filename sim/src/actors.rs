//! The simulated population and the genesis that funds it: clients, providers with a
//! behaviour profile (some of them faulty), validators, and newcomers that may register as
//! providers or validators during the run. Keys derive from the actor's index only, so every
//! seed starts from the same genesis.

use ed25519_dalek::SigningKey;
use gpuchain_auction::{AuctionGenesis, AuctionParams};
use gpuchain_genesis::AppGenesis;
use gpuchain_reputation::{ReputationGenesis, ReputationParams};
use gpuchain_serving::{GenesisJudge, ServingParams};
use gpuchain_slashing::{SlashingGenesis, SlashingParams};
use gpuchain_staking::{
    GenesisProvider, GenesisValidator, ProviderAttrs, ProviderClass, StakingParams,
};
use gpuchain_types::{Address, Amount};
use gpuchain_verify::{GenesisVerifier, VerifyParams};

/// 1 GPU in ugpu.
pub const GPU: Amount = 1_000_000;
/// The chain id of every simulation.
pub const CHAIN_ID: &str = "gpuchain-sim";

/// blake3 of the weights of the model the simulated serving orders name, which the genesis
/// verifiers and newcomers that register as verifiers judge.
pub const SERVED_MODEL: [u8; 32] = [7; 32];

/// How a provider behaves while faults are on. After faults stop, every provider is honest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// Commits and reveals the right result.
    Honest,
    /// Never commits: its leases miss their deadline.
    Lazy,
    /// Commits a wrong result: disputes, audits and faults.
    Liar,
    /// Commits but never reveals: its leases miss the reveal window.
    Silent,
    /// Commits the wrong result every colluder commits for that order: replicas of colluders
    /// agree, so only the audit of agreeing replicas catches them.
    Colluder,
}

/// What an actor is at genesis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Posts orders and moves funds.
    Client,
    /// A provider registered at genesis.
    Provider(Profile),
    /// A validator at genesis.
    Validator,
    /// A verifier at genesis (verdicts by profile: lazy ones miss, liars post the opposite).
    Verifier,
    /// Funded, but neither; may register as a provider or create a validator.
    Newcomer,
}

/// One simulated account.
#[derive(Clone, Debug)]
pub struct Actor {
    /// Signs its transactions.
    pub key: SigningKey,
    /// Its account.
    pub address: Address,
    /// ed25519 consensus key, should it ever validate.
    pub consensus_key: [u8; 32],
    /// Its genesis role.
    pub role: Role,
    /// How it behaves once it is a provider (newcomers get one too).
    pub profile: Profile,
}

fn key(domain: &str, i: usize) -> SigningKey {
    let mut hasher = blake3::Hasher::new();
    hasher.update(domain.as_bytes());
    hasher.update(&(i as u64).to_le_bytes());
    SigningKey::from_bytes(hasher.finalize().as_bytes())
}

const PROFILES: [Profile; 8] = [
    Profile::Honest,
    Profile::Colluder,
    Profile::Liar,
    Profile::Honest,
    Profile::Lazy,
    Profile::Colluder,
    Profile::Silent,
    Profile::Honest,
];

/// Profiles of the genesis verifiers.
const VERIFIER_PROFILES: [Profile; 4] = [
    Profile::Honest,
    Profile::Honest,
    Profile::Lazy,
    Profile::Honest,
];

/// The population: 4 clients, 8 providers (the last CPU-only), 4 validators, 6 newcomers,
/// 4 verifiers (one lazy; newcomers that register as verifiers keep their profile, so one
/// of them lies).
pub fn population() -> Vec<Actor> {
    let roles = (0..4)
        .map(|_| Role::Client)
        .chain(PROFILES.iter().map(|p| Role::Provider(*p)))
        .chain((0..4).map(|_| Role::Validator))
        .chain((0..6).map(|_| Role::Newcomer))
        .chain((0..VERIFIER_PROFILES.len()).map(|_| Role::Verifier));
    let first_verifier = 4 + PROFILES.len() + 4 + 6;
    roles
        .enumerate()
        .map(|(i, role)| {
            let key = key("gpuchain-sim/account", i);
            let address = Address::from_public_key(&key.verifying_key().to_bytes());
            let profile = match role {
                Role::Provider(p) => p,
                Role::Verifier => VERIFIER_PROFILES
                    .get(i.saturating_sub(first_verifier))
                    .copied()
                    .unwrap_or(Profile::Honest),
                _ => PROFILES
                    .get(i % PROFILES.len())
                    .copied()
                    .unwrap_or(Profile::Honest),
            };
            Actor {
                key,
                address,
                consensus_key: key_bytes("gpuchain-sim/consensus", i),
                role,
                profile,
            }
        })
        .collect()
}

fn key_bytes(domain: &str, i: usize) -> [u8; 32] {
    key(domain, i).verifying_key().to_bytes()
}

/// Declared hardware of provider number `i`: H200s and A100s in two regions, and CPU boxes.
pub fn attrs(i: usize, cpu: bool) -> ProviderAttrs {
    if cpu {
        return ProviderAttrs {
            class: ProviderClass::Cpu,
            gpu_model: String::new(),
            vram_mib: 0,
            gpu_count: 0,
            compute_capability: 0,
            driver_version: "none".into(),
            cuda_version: 0,
            region: "eu-west".into(),
            endpoint_url: format!("https://cpu{i}.example.org"),
        };
    }
    let h200 = i % 3 != 1;
    ProviderAttrs {
        class: ProviderClass::Gpu,
        gpu_model: if h200 { "NVIDIA H200" } else { "NVIDIA A100" }.into(),
        vram_mib: if h200 { 143_771 } else { 81_920 },
        gpu_count: 1 + u32::try_from(i % 4).unwrap_or(0),
        compute_capability: if h200 { 90 } else { 80 },
        driver_version: "550.54.15".into(),
        cuda_version: if h200 { 12_040 } else { 11_080 },
        region: if i.is_multiple_of(2) {
            "eu-west"
        } else {
            "us-east"
        }
        .into(),
        endpoint_url: format!("https://gpu{i}.example.org"),
    }
}

/// Short windows so that every life cycle (jail, unbonding, audits, decay) happens within a
/// few hundred blocks.
pub fn genesis(actors: &[Actor]) -> AppGenesis {
    let mut g = AppGenesis::default();
    g.bank.balances = actors
        .iter()
        .map(|a| {
            let each = match a.role {
                Role::Client => 10_000 * GPU,
                Role::Provider(_) => 3_000 * GPU,
                Role::Validator => 1_000 * GPU,
                Role::Newcomer | Role::Verifier => 3_000 * GPU,
            };
            (a.address, each)
        })
        .collect();
    g.staking.params = StakingParams {
        unbonding_blocks: 20,
        max_validators: 6,
        min_self_bond: GPU,
        min_provider_stake: 100 * GPU,
        ..StakingParams::default()
    };
    let last_provider = actors
        .iter()
        .rposition(|a| matches!(a.role, Role::Provider(_)));
    for (i, a) in actors.iter().enumerate() {
        match a.role {
            Role::Provider(_) => g.staking.providers.push(GenesisProvider {
                operator: a.address,
                attrs: attrs(i, Some(i) == last_provider),
                bond: 1_000 * GPU,
            }),
            Role::Validator => g.staking.validators.push(GenesisValidator {
                operator: a.address,
                consensus_pubkey: a.consensus_key,
                moniker: format!("validator-{i}"),
                self_bond: 100 * GPU,
            }),
            Role::Verifier => {
                g.verify.verifiers.push(GenesisVerifier {
                    operator: a.address,
                    bond: 500 * GPU,
                });
                g.serving.judges.push(GenesisJudge {
                    verifier: a.address,
                    models: vec![SERVED_MODEL],
                });
            }
            Role::Client | Role::Newcomer => {}
        }
    }
    g.slashing = SlashingGenesis {
        params: SlashingParams {
            signed_blocks_window: 20,
            max_missed_blocks: 10,
            jail_blocks: 10,
            provider_jail_blocks: 15,
            ..SlashingParams::default()
        },
    };
    g.reputation = ReputationGenesis {
        params: ReputationParams {
            half_life_blocks: 200,
            ..ReputationParams::default()
        },
    };
    g.auction = AuctionGenesis {
        params: AuctionParams {
            max_bid_window_blocks: 10,
            max_exec_deadline_blocks: 20,
            reveal_window_blocks: 3,
            challenge_window_blocks: 4,
            verdict_window_blocks: 6,
            audit_min_ppm: 100_000,
            audit_max_ppm: 500_000,
            // Short, so that runs of a few hundred blocks retire closed orders too.
            retention_secs: 60,
            ..AuctionParams::default()
        },
    };
    g.verify.params = VerifyParams {
        min_verifier_stake: 100 * GPU,
        verifier_unbonding_blocks: 20,
        verdict_deadline_blocks: 4,
        appeal_window_blocks: 3,
        appeal_deposit: 10 * GPU,
        verifier_jail_blocks: 15,
        challenge_ttl_blocks: 40,
        max_verdict_wait_blocks: 60,
        ..VerifyParams::default()
    };
    g.serving.params = ServingParams {
        min_duration_blocks: 5,
        max_duration_blocks: 30,
        max_bid_window_blocks: 3,
        claim_grace_blocks: 5,
        // Often, so that runs of a few hundred blocks see every audit path.
        audit_ppm: 300_000,
        second_opinion_ppm: 200_000,
        reveal_window_blocks: 4,
        verdict_window_blocks: 4,
        report_window_blocks: 4,
        retention_secs: 60,
        // Long enough that the appeal operation often finds a standing verdict.
        appeal_window_blocks: 20,
        appeal_deposit: 10 * GPU,
        ..ServingParams::default()
    };
    g
}
