//! An in-memory chain for the module's tests: bank, staking (a validator, three providers),
//! slashing, reputation, auction and verify (four verifiers) genesis applied; messages run
//! on a fork kept only on success (and untouched on failure); invariants after each block.

use ed25519_dalek::{Signer, SigningKey};
use gpuchain_auction::{AuctionGenesis, AuctionParams};
use gpuchain_bank::{BankGenesis, BankParams, BankRead};
use gpuchain_reputation::{ReputationGenesis, ReputationParams};
use gpuchain_slashing::{SlashingGenesis, SlashingParams, SlashingRead};
use gpuchain_staking::{
    GenesisProvider, GenesisValidator, ProviderAttrs, ProviderClass, StakingGenesis, StakingParams,
};
use gpuchain_types::{Address, Amount, BlockCtx, Event, MemState, Overlay};
use gpuchain_verify::{GenesisVerifier, VerifyGenesis, VerifyParams};

use crate::receipt::{BatchAck, Receipt};
use crate::{
    end_block, handler, GenesisJudge, ModelRef, MsgBidServing, MsgClaimServing, MsgOpenServing,
    ServingError, ServingGenesis, ServingKind, ServingMsg, ServingParams, ServingRead,
};

pub(crate) const GPU: u128 = 1_000_000;
/// Clients sign acknowledgements: their addresses come from keys `[seed; 32]`.
pub(crate) const CLIENT: u8 = 1;
pub(crate) const OTHER_CLIENT: u8 = 2;
pub(crate) const PROVIDERS: [u8; 3] = [10, 11, 12];
pub(crate) const VERIFIERS: [u8; 4] = [30, 31, 32, 33];
pub(crate) const VALIDATOR: u8 = 20;

pub(crate) fn key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

/// Clients' addresses are their keys'; everyone else's is `[seed; 20]`.
pub(crate) fn addr(seed: u8) -> Address {
    if seed == CLIENT || seed == OTHER_CLIENT {
        Address::from_public_key(&key(seed).verifying_key().to_bytes())
    } else {
        Address([seed; 20])
    }
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

fn attrs(region: &str) -> ProviderAttrs {
    ProviderAttrs {
        class: ProviderClass::Gpu,
        gpu_model: "NVIDIA H200".into(),
        vram_mib: 143_771,
        gpu_count: 1,
        compute_capability: 90,
        driver_version: "550.54.15".into(),
        cuda_version: 12_040,
        region: region.into(),
        endpoint_url: "https://p.example.org".into(),
    }
}

pub(crate) fn model() -> ModelRef {
    ModelRef {
        name: "SmolLM2-135M-Instruct".into(),
        blake3: [9; 32],
        kind: ServingKind::Generation,
    }
}

/// Two providers for 100 blocks at up to 2 GPU per million tokens, 50 GPU deposit, bids for 2
/// blocks.
pub(crate) fn open_msg() -> MsgOpenServing {
    MsgOpenServing {
        model: model(),
        providers: 2,
        max_price: 2 * GPU,
        duration_blocks: 100,
        bid_window_blocks: 2,
        deposit: 50 * GPU,
        region: None,
    }
}

/// A bid of `price` on order `order_id`, answering at `http://127.0.0.1:8081`.
pub(crate) fn bid_msg(order_id: u64, price: Amount) -> MsgBidServing {
    MsgBidServing {
        order_id,
        price,
        endpoint: "http://127.0.0.1:8081".into(),
    }
}

/// `count` receipts of lease `lease_id` from `first`, each of `units` tokens, over bodies
/// `request-<seq>` / `response-<seq>`.
pub(crate) fn receipts(lease_id: u64, first: u64, count: u64, units: u64) -> Vec<Receipt> {
    (first..first + count)
        .map(|seq| Receipt {
            lease_id,
            seq,
            request_hash: *blake3::hash(&request(seq)).as_bytes(),
            response_hash: *blake3::hash(&response(seq)).as_bytes(),
            units,
        })
        .collect()
}

pub(crate) fn request(seq: u64) -> Vec<u8> {
    format!("request-{seq}").into_bytes()
}

pub(crate) fn response(seq: u64) -> Vec<u8> {
    format!("response-{seq}").into_bytes()
}

/// A claim of `receipts` (covering exactly their range) acknowledged by the client with key
/// seed `signer`.
pub(crate) fn claim_msg(receipts: &[Receipt], signer: u8) -> MsgClaimServing {
    let first = receipts.first().unwrap();
    let last = receipts.last().unwrap();
    let ack = BatchAck::of("test", first.lease_id, first.seq, last.seq + 1, receipts).unwrap();
    let key = key(signer);
    MsgClaimServing {
        lease_id: ack.lease_id,
        first_seq: ack.first_seq,
        end_seq: ack.end_seq,
        count: ack.count,
        units: ack.units,
        root: ack.root,
        client_key: key.verifying_key().to_bytes(),
        client_signature: key.sign(&ack.sign_bytes()).to_bytes(),
    }
}

pub(crate) struct Chain {
    pub(crate) state: MemState,
    pub(crate) initial_supply: u128,
    pub(crate) events: Vec<Event>,
}

impl Chain {
    pub(crate) fn new(params: ServingParams) -> Chain {
        let mut state = MemState::new();
        let mut fork = Overlay::new(&state);
        let mut balances: Vec<(Address, u128)> = vec![
            (addr(CLIENT), 1_000 * GPU),
            (addr(OTHER_CLIENT), 1_000 * GPU),
            (addr(VALIDATOR), 1_000 * GPU),
        ];
        balances.extend(PROVIDERS.iter().map(|&p| (addr(p), 2_000 * GPU)));
        balances.extend(VERIFIERS.iter().map(|&v| (addr(v), 2_000 * GPU)));
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
                consensus_pubkey: key(VALIDATOR).verifying_key().to_bytes(),
                moniker: "v".into(),
                self_bond: 100 * GPU,
            }],
            providers: PROVIDERS
                .iter()
                .map(|&p| GenesisProvider {
                    operator: addr(p),
                    attrs: attrs(if p == 12 { "us-east" } else { "eu-west" }),
                    bond: 1_000 * GPU,
                })
                .collect(),
        }
        .apply(&mut fork)
        .unwrap();
        SlashingGenesis {
            params: SlashingParams::default(),
        }
        .apply(&mut fork)
        .unwrap();
        ReputationGenesis {
            params: ReputationParams::default(),
        }
        .apply(&mut fork)
        .unwrap();
        AuctionGenesis {
            params: AuctionParams::default(),
        }
        .apply(&mut fork)
        .unwrap();
        VerifyGenesis {
            params: VerifyParams::default(),
            verifiers: VERIFIERS
                .iter()
                .map(|&v| GenesisVerifier {
                    operator: addr(v),
                    bond: 1_000 * GPU,
                })
                .collect(),
        }
        .apply(&mut fork)
        .unwrap();
        // Every verifier judges the orders' model.
        let judges = VERIFIERS
            .iter()
            .map(|&v| GenesisJudge {
                verifier: addr(v),
                models: vec![model().blake3],
            })
            .collect();
        ServingGenesis { params, judges }.apply(&mut fork).unwrap();
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
    pub(crate) fn exec(
        &mut self,
        height: u64,
        signer: u8,
        msg: ServingMsg,
    ) -> Result<(), ServingError> {
        let params = self.state.serving_params();
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

    /// Runs the end-block at `height` and checks the invariants.
    pub(crate) fn end_block(&mut self, height: u64) {
        let mut fork = Overlay::new(&self.state);
        end_block(&mut fork, &ctx(height)).unwrap();
        let (writes, events) = fork.into_parts();
        self.state.apply(writes);
        self.events.extend(events);
        self.check(height);
    }

    /// Runs end-blocks from `from` through `to`.
    pub(crate) fn run(&mut self, from: u64, to: u64) {
        for h in from..=to {
            self.end_block(h);
        }
    }

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
        if let Err(e) = crate::check_invariants(s) {
            panic!("h{height}: {e}");
        }
        if let Err(e) = gpuchain_verify::check_invariants(s) {
            panic!("h{height}: {e}");
        }
    }

    pub(crate) fn balance(&self, seed: u8) -> u128 {
        self.state.balance(&addr(seed))
    }
}
