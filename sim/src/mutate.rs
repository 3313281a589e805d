//! Robustness inputs and the harness that feeds them to the app: arbitrary bytes, random
//! messages of every module (x/verify included) with extreme field values, and valid signed transactions mutated
//! in structure (nonce, fee, gas, chain id, memo, message count, re-signed or not) and in
//! bytes (flips, truncation, extension, splices). The cargo-fuzz targets in `fuzz/` and the
//! no-panic test in `tests/` both use it; choices come from a [`Draw`] so that a fuzzer's
//! input steers them directly.

use gpuchain_auction::{
    AuctionMsg, MsgBid, MsgCancelOrder, MsgCommitResult, MsgRevealResult, MsgWithdrawRewards,
};
use gpuchain_bank::{BankMsg, MsgMultiSend, MsgSend, Output};
use gpuchain_chain::{App, BlockInput};
use gpuchain_slashing::{MsgUnjail, SlashingMsg};
use gpuchain_staking::{
    MsgBondProvider, MsgCreateValidator, MsgDelegateSelf, MsgDeregisterProvider, MsgEditValidator,
    MsgRegisterProvider, MsgUnbondProvider, MsgUnbondValidator, MsgUpdateProvider, StakingMsg,
};
use gpuchain_tx::{Msg, Tx, TxParams};
use gpuchain_types::Address;
use gpuchain_upgrade::{MsgSignalUpgrade, MsgWithdrawSignal, UpgradeMsg};
use gpuchain_verify::{
    MsgAppeal, MsgBondVerifier, MsgCommitChallenge, MsgRegisterVerifier, MsgRevealChallenge,
    MsgSubmitVerdict, MsgUnbondVerifier, VerdictKind, VerifyMsg,
};

use crate::actors::{self, Actor};
use crate::Rng;

/// A source of choices.
pub trait Draw {
    /// The next 64 bits.
    fn draw(&mut self) -> u64;

    /// In `0..n` (0 when `n` is 0).
    fn below(&mut self, n: u64) -> u64 {
        self.draw().checked_rem(n).unwrap_or(0)
    }
}

impl Draw for Rng {
    fn draw(&mut self) -> u64 {
        self.next_u64()
    }
}

/// Choices read from a fuzzer's input, eight bytes at a time, then zeros.
pub struct InputDraw<'a> {
    data: &'a [u8],
}

impl<'a> InputDraw<'a> {
    /// Draws from `data`.
    pub fn new(data: &'a [u8]) -> InputDraw<'a> {
        InputDraw { data }
    }

    /// What is left of the input.
    pub fn rest(&self) -> &'a [u8] {
        self.data
    }
}

impl Draw for InputDraw<'_> {
    fn draw(&mut self) -> u64 {
        let n = self.data.len().min(8);
        let (head, tail) = self.data.split_at(n);
        self.data = tail;
        let mut b = [0u8; 8];
        b.iter_mut().zip(head).for_each(|(o, i)| *o = *i);
        u64::from_le_bytes(b)
    }
}

fn amount(d: &mut impl Draw) -> u128 {
    match d.below(6) {
        0 => 0,
        1 => 1,
        2 => u128::MAX,
        3 => u128::from(u64::MAX) + 1,
        _ => u128::from(d.below(10_000_000_000)),
    }
}

fn small(d: &mut impl Draw) -> u64 {
    match d.below(4) {
        0 => 0,
        1 => u64::MAX,
        _ => d.below(64),
    }
}

fn bytes32(d: &mut impl Draw) -> [u8; 32] {
    let mut out = [0u8; 32];
    for chunk in out.chunks_mut(8) {
        chunk.copy_from_slice(&d.draw().to_le_bytes());
    }
    out
}

fn text(d: &mut impl Draw) -> String {
    match d.below(4) {
        0 => String::new(),
        1 => "x".repeat(usize::try_from(d.below(1_000)).unwrap_or(0)),
        2 => "\u{7f}é\0".into(),
        _ => format!("name-{}", d.below(100)),
    }
}

fn address(d: &mut impl Draw, actors: &[Actor]) -> Address {
    let n = u64::try_from(actors.len()).unwrap_or(0);
    let i = usize::try_from(d.below(n.saturating_add(1))).unwrap_or(0);
    actors.get(i).map_or(Address([0xEE; 20]), |a| a.address)
}

fn attrs(d: &mut impl Draw) -> gpuchain_staking::ProviderAttrs {
    let mut a = actors::attrs(usize::try_from(d.below(8)).unwrap_or(0), d.below(2) == 0);
    match d.below(6) {
        0 => a.gpu_count = u32::MAX,
        1 => a.gpu_model = text(d),
        2 => a.endpoint_url = text(d),
        3 => a.vram_mib = 0,
        _ => {}
    }
    a
}

/// A message of any module with fields drawn from edge values and the actors' accounts.
pub fn random_msg(d: &mut impl Draw, actors: &[Actor]) -> Msg {
    match d.below(29) {
        0 => Msg::Bank(BankMsg::Send(MsgSend {
            to: address(d, actors),
            amount: amount(d),
        })),
        1 => Msg::Bank(BankMsg::MultiSend(MsgMultiSend {
            outputs: (0..d.below(5))
                .map(|_| Output {
                    to: address(d, actors),
                    amount: amount(d),
                })
                .collect(),
        })),
        2 => Msg::Staking(StakingMsg::CreateValidator(MsgCreateValidator {
            consensus_pubkey: bytes32(d),
            moniker: text(d),
            self_bond: amount(d),
        })),
        3 => Msg::Staking(StakingMsg::DelegateSelf(MsgDelegateSelf {
            amount: amount(d),
        })),
        4 => Msg::Staking(StakingMsg::UnbondValidator(MsgUnbondValidator {
            amount: amount(d),
        })),
        5 => Msg::Staking(StakingMsg::EditValidator(MsgEditValidator {
            moniker: text(d),
        })),
        6 => Msg::Staking(StakingMsg::RegisterProvider(MsgRegisterProvider {
            attrs: attrs(d),
            bond: amount(d),
        })),
        7 => Msg::Staking(StakingMsg::UpdateProvider(MsgUpdateProvider {
            attrs: attrs(d),
        })),
        8 => Msg::Staking(StakingMsg::BondProvider(MsgBondProvider {
            amount: amount(d),
        })),
        9 => Msg::Staking(StakingMsg::UnbondProvider(MsgUnbondProvider {
            amount: amount(d),
        })),
        10 => Msg::Staking(StakingMsg::DeregisterProvider(MsgDeregisterProvider {})),
        11 => Msg::Slashing(SlashingMsg::Unjail(MsgUnjail {})),
        12 | 13 => post_order(d),
        14 => Msg::Auction(AuctionMsg::CancelOrder(MsgCancelOrder {
            order_id: small(d),
        })),
        15 => Msg::Auction(AuctionMsg::Bid(MsgBid {
            order_id: small(d),
            price: amount(d),
        })),
        16 => Msg::Auction(AuctionMsg::CommitResult(MsgCommitResult {
            lease_id: small(d),
            commitment: bytes32(d),
        })),
        17 => Msg::Auction(AuctionMsg::RevealResult(MsgRevealResult {
            lease_id: small(d),
            result_hash: bytes32(d),
            salt: bytes32(d),
        })),
        18 => verify(VerifyMsg::RegisterVerifier(MsgRegisterVerifier {
            bond: amount(d),
        })),
        19 => verify(VerifyMsg::BondVerifier(MsgBondVerifier {
            amount: amount(d),
        })),
        20 => verify(VerifyMsg::UnbondVerifier(MsgUnbondVerifier {
            amount: amount(d),
        })),
        21 => verify(VerifyMsg::SubmitVerdict(MsgSubmitVerdict {
            lease_id: small(d),
            output_hash: bytes32(d),
            verdict: if d.below(2) == 0 {
                VerdictKind::Honest
            } else {
                VerdictKind::Faulty
            },
        })),
        22 => verify(VerifyMsg::Appeal(MsgAppeal { lease_id: small(d) })),
        23 => verify(VerifyMsg::CommitChallenge(MsgCommitChallenge {
            commitment: bytes32(d),
        })),
        24 => verify(VerifyMsg::RevealChallenge(MsgRevealChallenge {
            challenge_id: small(d),
            order_id: small(d),
            expected_output_hash: bytes32(d),
            salt: bytes32(d),
        })),
        25 => Msg::Upgrade(UpgradeMsg::Signal(MsgSignalUpgrade {
            name: text(d),
            height: small(d),
        })),
        26 => Msg::Upgrade(UpgradeMsg::Withdraw(MsgWithdrawSignal {})),
        _ => Msg::Auction(AuctionMsg::WithdrawRewards(MsgWithdrawRewards {})),
    }
}

fn verify(m: VerifyMsg) -> Msg {
    Msg::Verify(m)
}

fn post_order(d: &mut impl Draw) -> Msg {
    use gpuchain_auction::{ClassRequirement, MsgPostOrder, Requirements, TooFewBids};
    use gpuchain_jobspec::{BlobRef, InferenceSpec, JobSpec, ModelArch};
    let blob = |size| BlobRef {
        blake3: [3; 32],
        size,
        urls: vec!["https://b.example.org/x".into()],
    };
    let batch_size = if d.below(4) == 0 { 0 } else { 8 };
    Msg::Auction(AuctionMsg::PostOrder(MsgPostOrder {
        job: JobSpec::Inference(InferenceSpec {
            arch: ModelArch::DigitsMlp,
            weights: blob(d.below(100_000)),
            tokenizer: None,
            input: blob(1_000),
            batch_size,
            llama: None,
            generation: None,
            tolerance: None,
        }),
        requirements: Requirements {
            class: match d.below(3) {
                0 => ClassRequirement::Any,
                1 => ClassRequirement::Gpu,
                _ => ClassRequirement::Cpu,
            },
            gpu_model: (d.below(3) == 0).then(|| text(d)),
            min_vram_mib: small(d),
            min_gpu_count: u32::try_from(d.below(3)).unwrap_or(0),
            min_cuda_version: 0,
            region: (d.below(3) == 0).then(|| text(d)),
        },
        replicas: u32::try_from(d.below(7)).unwrap_or(1),
        max_price_per_replica: amount(d),
        bid_window_blocks: small(d),
        exec_deadline_blocks: small(d),
        on_too_few_bids: if d.below(2) == 0 {
            TooFewBids::Refund
        } else {
            TooFewBids::ReopenOnce
        },
    }))
}

/// A transaction from one of `actors` (or an unknown key), valid or mutated.
pub fn mutated_tx(
    d: &mut impl Draw,
    actors: &[Actor],
    nonce_of: impl Fn(&Address) -> u64,
) -> Vec<u8> {
    let n = u64::try_from(actors.len()).unwrap_or(0);
    let stranger = ed25519_dalek::SigningKey::from_bytes(&[0x5A; 32]);
    let key = actors
        .get(usize::try_from(d.below(n.saturating_add(1))).unwrap_or(0))
        .map_or(&stranger, |a| &a.key);
    let signer = Address::from_public_key(&key.verifying_key().to_bytes());
    let msgs = (0..1u64.saturating_add(d.below(3)))
        .map(|_| random_msg(d, actors))
        .collect();
    let params = TxParams::default();
    let tx =
        gpuchain_tx::build_signed_tx(key, actors::CHAIN_ID, nonce_of(&signer), &params, msgs, "");
    let mut body = tx.body.clone();
    let structural = d.below(3) == 0;
    if structural {
        match d.below(8) {
            0 => body.nonce = body.nonce.wrapping_add(d.below(3)).wrapping_sub(1),
            1 => body.fee = amount(d),
            2 => body.gas_limit = small(d),
            3 => body.chain_id = text(d),
            4 => body.memo = text(d),
            5 => body.msgs.clear(),
            6 => body.msgs = vec![random_msg(d, actors); 33],
            _ => body.msgs.push(random_msg(d, actors)),
        }
    }
    let mut raw = if structural && d.below(4) != 0 {
        Tx::sign(body, key).encode()
    } else {
        Tx { body, ..tx }.encode()
    };
    if d.below(3) == 0 {
        mutate_bytes(d, &mut raw);
    }
    raw
}

/// Flips, truncates, extends or splices `raw`.
pub fn mutate_bytes(d: &mut impl Draw, raw: &mut Vec<u8>) {
    let len = u64::try_from(raw.len()).unwrap_or(0);
    let at = usize::try_from(d.below(len.saturating_add(1))).unwrap_or(0);
    match d.below(4) {
        0 => {
            if let Some(b) = raw.get_mut(at) {
                *b ^= 1 << d.below(8);
            }
        }
        1 => raw.truncate(at),
        2 => raw.extend((0..d.below(16)).map(|_| d.draw().to_le_bytes()[0])),
        _ => {
            let v = d.draw().to_le_bytes();
            let end = at.saturating_add(8).min(raw.len());
            if let Some(slice) = raw.get_mut(at..end) {
                slice.iter_mut().zip(v).for_each(|(o, i)| *o = i);
            }
        }
    }
}

/// The app at the simulator's genesis with one empty block committed, for feeding inputs.
pub struct Harness {
    /// The app.
    pub app: App,
    /// The actors of the genesis.
    pub actors: Vec<Actor>,
    _dir: tempfile::TempDir,
}

impl Harness {
    /// A fresh app on a temporary RocksDB.
    pub fn new() -> anyhow::Result<Harness> {
        let dir = tempfile::tempdir()?;
        let app = App::open(dir.path())?;
        let population = actors::population();
        app.init_chain_with(actors::CHAIN_ID, &actors::genesis(&population))?;
        let h = Harness {
            app,
            actors: population,
            _dir: dir,
        };
        h.block(&[], true)?;
        Ok(h)
    }

    /// The committed nonce of `who`.
    pub fn nonce(&self, who: &Address) -> u64 {
        self.app
            .read_committed(|s| gpuchain_bank::BankRead::nonce(s, who))
    }

    /// CheckTx's code.
    pub fn check_tx(&self, raw: &[u8]) -> u32 {
        crate::abci::check_tx(&self.app, raw)
    }

    /// FinalizeBlock on `txs` as given (no proposal filtering) at the next height; commits
    /// when asked, then checks the invariants. Returns the transactions' codes.
    pub fn block(&self, txs: &[Vec<u8>], commit: bool) -> anyhow::Result<Vec<u32>> {
        let (height, _) = self.app.committed();
        let h = height.saturating_add(1);
        let refs: Vec<&[u8]> = txs.iter().map(Vec::as_slice).collect();
        let hash = blake3::hash(&h.to_le_bytes());
        let input = BlockInput {
            height: h,
            hash: hash.as_bytes(),
            time_ms: h.saturating_mul(1_000),
            txs: &refs,
            misbehavior: &[],
            votes: &[],
        };
        let (outcome, _) = self.app.finalize(&input)?;
        if outcome.tx_results.len() != txs.len() {
            anyhow::bail!(
                "{} results for {} transactions",
                outcome.tx_results.len(),
                txs.len()
            );
        }
        if commit {
            self.app.commit()?;
            let addresses: Vec<Address> = self.actors.iter().map(|a| a.address).collect();
            let initial = actors::genesis(&self.actors)
                .bank
                .balances
                .iter()
                .map(|(_, v)| *v)
                .sum();
            self.app
                .read_committed(|s| crate::invariants::check_all(s, h, initial, &addresses))
                .map_err(|e| anyhow::anyhow!("invariant broken at block {h}: {e}"))?;
        }
        Ok(outcome.tx_results.iter().map(|r| r.code).collect())
    }
}
