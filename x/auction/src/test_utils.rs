//! A small in-memory chain for the module's tests: bank, staking (one validator, five
//! providers), slashing, reputation and auction genesis applied; messages run on a fork that
//! is kept only on success (and must be untouched on failure); invariants after each block.

use gpuchain_bank::{BankGenesis, BankParams, BankRead};
use gpuchain_jobspec::{BlobRef, InferenceSpec, JobSpec, ModelArch};
use gpuchain_reputation::{ReputationGenesis, ReputationParams};
use gpuchain_slashing::{SlashingGenesis, SlashingParams, SlashingRead};
use gpuchain_staking::{
    GenesisProvider, GenesisValidator, ProviderAttrs, ProviderClass, StakingGenesis, StakingParams,
};
use gpuchain_types::{Address, BlockCtx, Event, MemState, Overlay};

use crate::{
    end_block, escrow, handler, AuctionError, AuctionGenesis, AuctionMsg, AuctionParams,
    ClassRequirement, MsgPostOrder, Requirements, TooFewBids,
};

pub const GPU: u128 = 1_000_000;
/// Clients are accounts 1..=3.
pub const CLIENTS: [u8; 3] = [1, 2, 3];
/// GPU providers 10..=13; provider 14 is CPU-only.
pub const PROVIDERS: [u8; 5] = [10, 11, 12, 13, 14];
/// The validator operator.
pub const VALIDATOR: u8 = 20;

pub fn addr(seed: u8) -> Address {
    Address([seed; 20])
}

/// The context of block `height`, on a chain that makes one block a second.
pub fn ctx(height: u64) -> BlockCtx {
    BlockCtx {
        height,
        chain_id: "test".into(),
        entropy: *blake3::hash(&height.to_be_bytes()).as_bytes(),
        time_ms: height.saturating_mul(1_000),
    }
}

pub fn attrs(class: ProviderClass) -> ProviderAttrs {
    let gpu = class == ProviderClass::Gpu;
    ProviderAttrs {
        class,
        gpu_model: if gpu {
            "NVIDIA H200".into()
        } else {
            String::new()
        },
        vram_mib: if gpu { 143_771 } else { 0 },
        gpu_count: u32::from(gpu),
        compute_capability: if gpu { 90 } else { 0 },
        driver_version: "550.54.15".into(),
        cuda_version: if gpu { 12_040 } else { 0 },
        region: "eu-west".into(),
        endpoint_url: "https://p.example.org".into(),
    }
}

pub fn job() -> JobSpec {
    let blob = |size| BlobRef {
        blake3: [7; 32],
        size,
        urls: vec!["http://127.0.0.1:1/blob/x".into()],
    };
    JobSpec::Inference(InferenceSpec {
        arch: ModelArch::DigitsMlp,
        weights: blob(40_000),
        tokenizer: None,
        input: blob(1_000),
        batch_size: 64,
        llama: None,
        generation: None,
        tolerance: None,
    })
}

/// A GPU order: k replicas at `max` ugpu, bid window 3, execution deadline 5.
pub fn order_msg(k: u32, max: u128) -> MsgPostOrder {
    MsgPostOrder {
        job: job(),
        requirements: Requirements {
            class: ClassRequirement::Gpu,
            gpu_model: None,
            min_vram_mib: 40_000,
            min_gpu_count: 1,
            min_cuda_version: 12_000,
            region: None,
        },
        replicas: k,
        max_price_per_replica: max,
        bid_window_blocks: 3,
        exec_deadline_blocks: 5,
        on_too_few_bids: TooFewBids::Refund,
    }
}

pub fn test_params() -> AuctionParams {
    AuctionParams {
        reveal_window_blocks: 3,
        challenge_window_blocks: 4,
        verdict_window_blocks: 6,
        compare_window_blocks: 3,
        ..AuctionParams::default()
    }
}

pub struct Chain {
    pub state: MemState,
    pub initial_supply: u128,
    /// Every event kept so far, in order.
    pub events: Vec<Event>,
}

impl Chain {
    pub fn new(params: AuctionParams) -> Chain {
        Chain::with_extra_providers(params, 0)
    }

    /// The address of the `i`-th extra GPU provider of [`Chain::with_extra_providers`].
    pub fn extra_provider(i: u32) -> Address {
        let mut bytes = [0xAA; 20];
        bytes[..4].copy_from_slice(&i.to_be_bytes());
        Address(bytes)
    }

    /// The fixture plus `extra` more GPU providers (100 GPU bond, 100 GPU spare each).
    pub fn with_extra_providers(params: AuctionParams, extra: u32) -> Chain {
        let mut state = MemState::new();
        let mut fork = Overlay::new(&state);
        let mut balances: Vec<(Address, u128)> =
            CLIENTS.iter().map(|&c| (addr(c), 1_000 * GPU)).collect();
        balances.extend(PROVIDERS.iter().map(|&p| (addr(p), 2_000 * GPU)));
        balances.push((addr(VALIDATOR), 1_000 * GPU));
        balances.extend((0..extra).map(|i| (Chain::extra_provider(i), 200 * GPU)));
        BankGenesis {
            params: BankParams::default(),
            balances,
        }
        .apply(&mut fork)
        .unwrap();
        let extra_providers = (0..extra).map(|i| GenesisProvider {
            operator: Chain::extra_provider(i),
            attrs: attrs(ProviderClass::Gpu),
            bond: 100 * GPU,
        });
        let providers = PROVIDERS
            .iter()
            .map(|&p| GenesisProvider {
                operator: addr(p),
                attrs: attrs(if p == 14 {
                    ProviderClass::Cpu
                } else {
                    ProviderClass::Gpu
                }),
                bond: 1_000 * GPU,
            })
            .chain(extra_providers)
            .collect();
        let validators = vec![GenesisValidator {
            operator: addr(VALIDATOR),
            consensus_pubkey: ed25519_dalek::SigningKey::from_bytes(&[VALIDATOR; 32])
                .verifying_key()
                .to_bytes(),
            moniker: "v".into(),
            self_bond: 100 * GPU,
        }];
        StakingGenesis {
            params: StakingParams {
                min_provider_stake: 100 * GPU,
                ..StakingParams::default()
            },
            validators,
            providers,
        }
        .apply(&mut fork)
        .unwrap();
        SlashingGenesis {
            params: SlashingParams {
                provider_jail_blocks: 10,
                ..SlashingParams::default()
            },
        }
        .apply(&mut fork)
        .unwrap();
        ReputationGenesis {
            params: ReputationParams::default(),
        }
        .apply(&mut fork)
        .unwrap();
        AuctionGenesis { params }.apply(&mut fork).unwrap();
        let (writes, _) = fork.into_parts();
        state.apply(writes);
        let initial_supply = state.supply();
        Chain {
            state,
            initial_supply,
            events: Vec::new(),
        }
    }

    /// Runs a message; keeps its writes only on success and checks a failure wrote nothing.
    pub fn exec(&mut self, height: u64, signer: u8, msg: AuctionMsg) -> Result<(), AuctionError> {
        let params = crate::AuctionRead::auction_params(&self.state);
        let mut fork = Overlay::new(&self.state);
        let result = handler::check_stateless(&msg, &params)
            .and_then(|()| handler::execute(&mut fork, &ctx(height), &addr(signer), &msg));
        if result.is_ok() {
            let (writes, events) = fork.into_parts();
            self.state.apply(writes);
            self.events.extend(events);
        } else {
            assert!(fork.writes().is_empty(), "failed {msg:?} left writes");
        }
        result
    }

    /// Runs the auction end-block at `height` and checks the invariants.
    pub fn end_block(&mut self, height: u64) {
        self.end_block_at(&ctx(height));
    }

    /// Runs the auction end-block of the block `ctx` (its own height and time) and checks
    /// the invariants.
    pub fn end_block_at(&mut self, ctx: &BlockCtx) {
        let mut fork = Overlay::new(&self.state);
        end_block(&mut fork, ctx).unwrap();
        let (writes, events) = fork.into_parts();
        self.state.apply(writes);
        self.events.extend(events);
        self.check(ctx.height);
    }

    pub fn check(&self, height: u64) {
        let s = &self.state;
        let balances: u128 = s.all_balances().into_iter().map(|(_, a)| a).sum();
        assert_eq!(balances, s.supply(), "h{height}: balances == supply");
        let burned: u128 = s.slash_records().iter().map(|r| r.outcome.burned).sum();
        assert_eq!(
            self.initial_supply - s.supply(),
            burned,
            "h{height}: only slashes burn"
        );
        if let Err(e) = escrow::check_invariants(s) {
            panic!("h{height}: {e}");
        }
    }

    pub fn balance(&self, seed: u8) -> u128 {
        self.state.balance(&addr(seed))
    }
}
