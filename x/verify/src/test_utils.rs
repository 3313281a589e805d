//! A small in-memory chain for the module's tests: bank, staking (one validator, four GPU
//! providers), slashing, reputation, auction and verify genesis with three verifiers;
//! messages run on a fork kept only on success (and must be untouched on failure); the
//! end-block runs the auction then verify; invariants after every block.

use gpuchain_auction::{
    commitment, AuctionGenesis, AuctionMsg, AuctionParams, AuctionRead, ClassRequirement,
    LeaseState, MsgBid, MsgCommitResult, MsgCompareReplicas, MsgPostOrder, MsgRevealResult,
    Requirements, TooFewBids,
};
use gpuchain_bank::{BankGenesis, BankParams, BankRead};
use gpuchain_jobspec::{BlobRef, InferenceSpec, JobSpec, ModelArch};
use gpuchain_reputation::{ReputationGenesis, ReputationParams};
use gpuchain_slashing::{SlashingGenesis, SlashingParams, SlashingRead};
use gpuchain_staking::{
    GenesisProvider, GenesisValidator, ProviderAttrs, ProviderClass, StakingGenesis, StakingParams,
};
use gpuchain_types::{Address, BlockCtx, Event, MemState, Overlay};

use crate::{
    check_invariants, end_block, handler, GenesisVerifier, VerifyError, VerifyGenesis, VerifyMsg,
    VerifyParams, VerifyRead,
};

pub(crate) const GPU: u128 = 1_000_000;
/// Clients (and ringer posters) are accounts 1..=3.
pub(crate) const CLIENTS: [u8; 3] = [1, 2, 3];
/// GPU providers.
pub(crate) const PROVIDERS: [u8; 4] = [10, 11, 12, 13];
/// Verifiers registered at genesis.
pub(crate) const VERIFIERS: [u8; 3] = [30, 31, 32];
/// An account with funds that is not yet a verifier.
pub(crate) const NEWCOMER: u8 = 33;
/// The validator operator.
pub(crate) const VALIDATOR: u8 = 20;

pub(crate) fn addr(seed: u8) -> Address {
    Address([seed; 20])
}

/// The context of block `height`, on a chain that makes one block a second.
pub(crate) fn ctx(height: u64) -> BlockCtx {
    BlockCtx {
        height,
        chain_id: "test".into(),
        entropy: *blake3::hash(&height.to_be_bytes()).as_bytes(),
        time_ms: height.saturating_mul(1_000),
    }
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
        endpoint_url: "https://p.example.org".into(),
    }
}

pub(crate) fn order_msg(k: u32, max: u128) -> MsgPostOrder {
    let blob = |size| BlobRef {
        blake3: [7; 32],
        size,
        urls: vec!["http://127.0.0.1:1/blob/x".into()],
    };
    MsgPostOrder {
        job: JobSpec::Inference(InferenceSpec {
            arch: ModelArch::DigitsMlp,
            weights: blob(40_000),
            tokenizer: None,
            input: blob(1_000),
            batch_size: 64,
            llama: None,
            generation: None,
            tolerance: None,
        }),
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

/// Auction parameters for tests: short windows; every lone result audited.
pub(crate) fn auction_params() -> AuctionParams {
    AuctionParams {
        reveal_window_blocks: 3,
        challenge_window_blocks: 4,
        verdict_window_blocks: 6,
        audit_min_ppm: 1_000_000,
        audit_max_ppm: 1_000_000,
        ..AuctionParams::default()
    }
}

/// Verify parameters for tests: small stakes, short windows.
pub(crate) fn verify_params() -> VerifyParams {
    VerifyParams {
        min_verifier_stake: 100 * GPU,
        verifier_unbonding_blocks: 10,
        verdict_deadline_blocks: 5,
        appeal_window_blocks: 3,
        appeal_deposit: 10 * GPU,
        verifier_jail_blocks: 20,
        challenge_ttl_blocks: 50,
        max_open_challenges: 2,
        spot_check_ppm: 0,
        ..VerifyParams::default()
    }
}

pub(crate) struct Chain {
    pub(crate) state: MemState,
    pub(crate) initial_supply: u128,
    pub(crate) events: Vec<Event>,
}

impl Chain {
    pub(crate) fn new() -> Chain {
        Chain::with(auction_params(), verify_params(), &VERIFIERS)
    }

    pub(crate) fn with(auction: AuctionParams, verify: VerifyParams, verifiers: &[u8]) -> Chain {
        let mut state = MemState::new();
        let mut fork = Overlay::new(&state);
        let mut balances: Vec<(Address, u128)> =
            CLIENTS.iter().map(|&c| (addr(c), 1_000 * GPU)).collect();
        balances.extend(PROVIDERS.iter().map(|&p| (addr(p), 2_000 * GPU)));
        balances.extend(VERIFIERS.iter().map(|&v| (addr(v), 500 * GPU)));
        balances.push((addr(NEWCOMER), 500 * GPU));
        balances.push((addr(VALIDATOR), 1_000 * GPU));
        // Seed the verification pool so fees and reimbursements can be paid.
        balances.push((
            gpuchain_auction::module_account::verification_pool(),
            50 * GPU,
        ));
        BankGenesis {
            params: BankParams::default(),
            balances,
        }
        .apply(&mut fork)
        .unwrap();
        StakingGenesis {
            params: StakingParams {
                min_provider_stake: 100 * GPU,
                ..StakingParams::default()
            },
            validators: vec![GenesisValidator {
                operator: addr(VALIDATOR),
                consensus_pubkey: ed25519_dalek::SigningKey::from_bytes(&[VALIDATOR; 32])
                    .verifying_key()
                    .to_bytes(),
                moniker: "v".into(),
                self_bond: 100 * GPU,
            }],
            providers: PROVIDERS
                .iter()
                .map(|&p| GenesisProvider {
                    operator: addr(p),
                    attrs: attrs(),
                    bond: 1_000 * GPU,
                })
                .collect(),
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
        AuctionGenesis { params: auction }.apply(&mut fork).unwrap();
        VerifyGenesis {
            params: verify,
            verifiers: verifiers
                .iter()
                .map(|&v| GenesisVerifier {
                    operator: addr(v),
                    bond: 200 * GPU,
                })
                .collect(),
        }
        .apply(&mut fork)
        .unwrap();
        let (writes, _) = fork.into_parts();
        state.apply(writes);
        let initial_supply = state.supply();
        Chain {
            state,
            initial_supply,
            events: Vec::new(),
        }
    }

    /// Runs a verify message; keeps its writes only on success and checks that a failure
    /// wrote nothing and emitted nothing.
    pub(crate) fn exec(
        &mut self,
        height: u64,
        signer: u8,
        msg: VerifyMsg,
    ) -> Result<(), VerifyError> {
        let params = self.state.verify_params();
        let mut fork = Overlay::new(&self.state);
        let result = handler::check_stateless(&msg, &params)
            .and_then(|()| handler::execute(&mut fork, &ctx(height), &addr(signer), &msg));
        let (writes, events) = fork.into_parts();
        if result.is_ok() {
            self.state.apply(writes);
            self.events.extend(events);
        } else {
            assert!(writes.is_empty(), "failed {msg:?} left writes");
            assert!(events.is_empty(), "failed {msg:?} left events");
        }
        result
    }

    /// Runs an auction message that must succeed.
    pub(crate) fn auction(&mut self, height: u64, signer: u8, msg: AuctionMsg) {
        let mut fork = Overlay::new(&self.state);
        gpuchain_auction::handler::execute(&mut fork, &ctx(height), &addr(signer), &msg).unwrap();
        let (writes, events) = fork.into_parts();
        self.state.apply(writes);
        self.events.extend(events);
    }

    /// The auction end-block, then the verify end-block, then the invariants.
    pub(crate) fn end_block(&mut self, height: u64) {
        let mut fork = Overlay::new(&self.state);
        gpuchain_auction::end_block(&mut fork, &ctx(height)).unwrap();
        end_block(&mut fork, &ctx(height)).unwrap();
        let (writes, events) = fork.into_parts();
        self.state.apply(writes);
        self.events.extend(events);
        self.check(height);
    }

    pub(crate) fn run_to(&mut self, from: u64, to: u64) {
        for h in from..=to {
            self.end_block(h);
        }
    }

    /// Supply: every unit in exactly one account, and only provider slashes burn; the
    /// auction's and this module's accounts hold exactly their obligations.
    pub(crate) fn check(&self, height: u64) {
        let s = &self.state;
        let balances: u128 = s.all_balances().into_iter().map(|(_, a)| a).sum();
        assert_eq!(balances, s.supply(), "h{height}: balances == supply");
        let burned: u128 = s.slash_records().iter().map(|r| r.outcome.burned).sum();
        assert_eq!(
            self.initial_supply - s.supply(),
            burned,
            "h{height}: only slashes burn"
        );
        if let Err(e) = gpuchain_auction::escrow::check_invariants(s) {
            panic!("h{height}: {e}");
        }
        if let Err(e) = check_invariants(s) {
            panic!("h{height}: {e}");
        }
    }

    pub(crate) fn balance(&self, a: &Address) -> u128 {
        self.state.balance(a)
    }

    pub(crate) fn events_of(&self, kind: &str) -> Vec<&Event> {
        self.events.iter().filter(|e| e.kind == kind).collect()
    }

    /// Client 1 posts a k-replica order at `h`, `bidders` bid at `h + 1`; cleared at
    /// `h + 3`. Returns the order id.
    pub(crate) fn cleared_order(&mut self, h: u64, client: u8, bidders: &[u8]) -> u64 {
        let k = u32::try_from(bidders.len()).unwrap().min(2);
        self.auction(h, client, AuctionMsg::PostOrder(order_msg(k, GPU)));
        let id = self.state.orders().last().unwrap().id;
        self.end_block(h);
        for (i, p) in bidders.iter().enumerate() {
            let price = GPU / 2 + u128::try_from(i).unwrap() * 1_000;
            self.auction(
                h + 1,
                *p,
                AuctionMsg::Bid(MsgBid {
                    order_id: id,
                    price,
                }),
            );
        }
        self.run_to(h + 1, h + 3);
        id
    }

    /// Every lease of `order_id` commits and reveals `results` at `h` (in lease order).
    pub(crate) fn deliver(&mut self, h: u64, order_id: u64, results: &[[u8; 32]]) {
        let leases = self.state.leases_of_order(order_id);
        for (lease, r) in leases.iter().zip(results) {
            let p = lease.provider;
            self.auction_as(
                h,
                p,
                AuctionMsg::CommitResult(MsgCommitResult {
                    lease_id: lease.id,
                    commitment: commitment(r, &p, &[9; 32]),
                }),
            );
        }
        for (lease, r) in leases.iter().zip(results) {
            self.auction_as(
                h,
                lease.provider,
                AuctionMsg::RevealResult(MsgRevealResult {
                    lease_id: lease.id,
                    result_hash: *r,
                    salt: [9; 32],
                }),
            );
        }
        // Different results are really different: the first provider to compare says so.
        if let Some(lease) = self
            .state
            .leases_of_order(order_id)
            .into_iter()
            .find(|l| l.state == LeaseState::Comparing)
        {
            self.auction_as(
                h,
                lease.provider,
                AuctionMsg::CompareReplicas(MsgCompareReplicas {
                    lease_id: lease.id,
                    consistent: false,
                }),
            );
        }
    }

    fn auction_as(&mut self, height: u64, signer: Address, msg: AuctionMsg) {
        let mut fork = Overlay::new(&self.state);
        gpuchain_auction::handler::execute(&mut fork, &ctx(height), &signer, &msg).unwrap();
        let (writes, events) = fork.into_parts();
        self.state.apply(writes);
        self.events.extend(events);
    }
}
