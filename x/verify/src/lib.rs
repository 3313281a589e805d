//! x/verify: the on-chain half of result verification. Bonded verifiers re-execute audited
//! and disputed results and post verdicts with their stake at risk; a verdict can be
//! appealed once and is settled by a second verifier and, if the two disagree, a third;
//! a share of unappealed `honest` verdicts is spot-checked by a second verifier; verifiers
//! plant challenges ("ringers") whose answers they committed beforehand. The auction ([`gpuchain_auction`]) decides which
//! results need a verdict (commit-reveal, acceptance, audit sampling); this module decides
//! who gives it, when, and what happens to whoever was wrong.
//!
//! # Wiring (for `x/tx` and `chain/`)
//!
//! - Transaction message: append `Verify(gpuchain_verify::VerifyMsg)` as **variant 4** of the
//!   `Msg` enum in `x/tx` (after `Auction` = 3). Route it like the auction: run
//!   [`handler::check_stateless`]`(msg, &state.verify_params())` in CheckTx and before
//!   execution, then [`handler::execute`]`(fork, ctx, signer, msg)`; map [`VerifyError`]
//!   with [`gpuchain_types::ModuleError`] (codespace `verify`, codes 101–129).
//! - End-block: call [`end_block`]`(state, ctx)` **right after** `gpuchain_auction::end_block`
//!   (so a lease the auction sampled or disputed in this block is assigned in the same block)
//!   and **before** `gpuchain_staking::end_block`. An error is a broken invariant: halt.
//! - Genesis: apply [`VerifyGenesis`] after the bank, staking, slashing, reputation and
//!   auction genesis (it moves genesis verifier bonds out of bank balances and checks its
//!   deadlines against the auction's parameters).
//! - Queries: every key is under `verify/` ([`state_key`]); `/prefix/verify/verifiers/`,
//!   `/prefix/verify/cases/`, `/prefix/verify/challenges/` list them.
//!
//! # Rules
//!
//! **Assignment.** Each end-block, every lease the auction holds in `AuditPending` or
//! `Disputed` without a [`Case`] gets one verifier, drawn by bond among *eligible*
//! verifiers (bond ≥ `min_verifier_stake`, not jailed) that are neither the lease's
//! provider, its client, nor a provider of another replica of the order (`src/assign.rs` gives
//! the draw). The verifier must post its verdict by `height + verdict_deadline_blocks`;
//! the event `verify.assigned {lease_id, verifier, deadline, round}` tells its agent. Without
//! any eligible verifier no case is opened, the lease is held and the draw retried each block
//! until `max_verdict_wait_blocks` after its reveal window; then the auction's fallback
//! applies: the result is accepted (audit, availability check or dispute; nobody slashed).
//! While a case is open the module holds the lease ([`gpuchain_auction::settlement::hold_lease`]) so
//! neither the auction's fallback nor its payout can overtake the settlement.
//!
//! **Missed deadline.** A verifier that posts nothing by its deadline loses
//! `verifier_miss_slash_ppm` of its bond (to the verification pool) and is jailed for
//! `verifier_jail_blocks`; the round is reassigned once to another verifier. If that one
//! misses too (or nobody is left), the round fails: a first round closes with no verdict, an
//! appeal round lets the first verdict stand with the deposit returned, a tie-break round
//! closes with no verdict and the deposit returned. A case closed with no verdict is drawn
//! again as a new first round, without anyone who served on it, while the wait lasts.
//!
//! **Settlement of a verifier–provider disagreement (appeals).** A verdict does not take
//! effect when posted: it stands for `appeal_window_blocks`, in which the party it goes
//! against (the provider for `faulty`, the client for `honest`) may appeal by locking
//! `appeal_deposit`. A second verifier, drawn the same way and excluding everyone who has
//! served on the case, re-executes on the **canonical path**. If it agrees, the first verdict
//! stands. If not, a third verifier (canonical path) breaks the tie: the verdict two of
//! three verifiers gave stands. Then the standing verdict is applied with
//! [`gpuchain_auction::settlement::apply_verdict`] (`faulty`: the provider is slashed through
//! x/slashing, the client refunded, reputation lowered, the first verifier on the standing
//! side rewarded as the prover; `honest`: paid after the challenge window), one audit fee
//! (the auction's `audit_fee_ppm` of the lease price) is shared by the verifiers on the
//! standing side, each part at most what the verification pool holds (for `honest` the pool
//! pays it, funded by the leases' verification charges, but for a ringer overturned on
//! appeal only up to what its owner's slash put into the pool, since a ringer's case exists
//! whether or not an audit was drawn; for `faulty` it is at most the
//! provider's wrong-result slash, which pays it back to the pool first), every verifier on
//! the losing side loses
//! `verifier_wrong_slash_ppm` of its bond (`wrong_slash_harmed_share_ppm` of it to the
//! appellant when the appeal overturned the first verdict, the rest to the verification
//! pool) and is jailed, and the deposit goes back to the appellant if the standing verdict
//! differs from the first one, to the verification pool otherwise. The chain never
//! compares outputs itself: tolerance is the verifier agents' job, and the majority of
//! independent bonded verifiers on the canonical path is the final word.
//!
//! A standing verdict reaches the replicas that returned the same result, but not one with
//! a case of its own still open (a replica appealing its own ringer case while its twin lets
//! the ringer's verdict stand): that case's verdict settles it. Should a lease end under an
//! open case all the same, the case goes on without holding it, still slashing the
//! verifiers who were wrong and deciding the deposit, and applies nothing to the lease.
//!
//! **Spot checks.** When the appeal window of an unappealed `honest` first verdict closes,
//! `spot_check_ppm` of them (drawn from that block's seed) become an appeal round with no
//! appellant and no deposit: a verifier that calls results honest without running them is
//! overturned and slashed like any other whenever the result was wrong.
//!
//! **Challenges (ringers).** A verifier commits `blake3("gpuchain/verify/challenge/v1" ‖
//! poster (20 bytes) ‖ expected_output_hash ‖ salt)` ([`challenge_commitment`]), then posts an
//! ordinary order from the ordinary account `poster`. When every lease of the order has
//! revealed, the verifier reveals: the commitment must open, predate the order (committed
//! at a lower height) and name the order's client. A lease whose result hash equals the
//! expected hash passed (reputation `challenge_passed`); a lease whose hash differs gets
//! **the revealing verifier's own `faulty` verdict**, which is appealable exactly like an
//! audit verdict (a ringer with a wrong expected answer costs the verifier
//! `verifier_wrong_slash_ppm`). We chose this over assigning another verifier because the
//! committed answer is the verifier's re-execution, made before the provider could know it
//! was tested; an appeal still gives the provider a canonical-path re-run. Nothing is
//! reimbursed from the verification pool: the poster pays for a ringer like any order and
//! is paid back only out of a caught provider's slash (the client's and the prover's
//! shares). A pool refund let one owner of a verifier, a poster and a provider pump the pool
//! with ringers its own provider "passed" without computing anything. A passed ringer never
//! settles a lease still waiting for an audit or a dispute.
//!
//! Invariants (checked by the tests, not on chain): `verify_bonded` holds the sum of the
//! verifiers' bonds, `verify_unbonding` the sum of queued unbondings, `verify_appeals` the
//! sum of open appeal deposits; the module never mints or burns.

// Consensus code never panics: bad input is an error code that changes nothing.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::todo,
        clippy::unimplemented,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )
)]

mod assign;
// The economics check is analysis the tests and the sweep example run over chosen job
// values, never part of executing a block: exact i128 arithmetic over bounded job values
// (overflow checks are on in every profile) reads as the formulas it checks.
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::arithmetic_side_effects
)]
pub mod economics;
mod end_block;
mod error;
mod events;
mod genesis;
pub mod handler;
pub mod jury;
mod msgs;
mod params;
mod retire;
mod settle;
pub mod state_key;
#[cfg(test)]
mod test_utils;
mod view;

pub use end_block::{end_block, spot_check_floor};
pub use error::VerifyError;
pub use events::*;
pub use genesis::{GenesisVerifier, VerifyGenesis};
pub use msgs::{
    MsgAppeal, MsgBondVerifier, MsgCommitChallenge, MsgRecuse, MsgRegisterVerifier,
    MsgRevealChallenge, MsgSubmitVerdict, MsgUnbondVerifier, VerdictKind, VerifyMsg,
};
pub use params::VerifyParams;
pub use settle::case_fee;
pub use view::{check_invariants, VerifyRead, VerifyWrite};

use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_types::{Address, Amount};
use serde::{Deserialize, Serialize};

/// Module accounts of x/verify. No key controls them; only module code moves their funds.
/// Audit fees and challenge reimbursements come from the auction's
/// [`gpuchain_auction::settlement::verification_pool`].
pub mod module_account {
    use gpuchain_types::Address;

    /// Holds every verifier's bond.
    pub fn verify_bonded() -> Address {
        Address::module("verify_bonded")
    }

    /// Holds verifier stake waiting out `verifier_unbonding_blocks`.
    pub fn verify_unbonding() -> Address {
        Address::module("verify_unbonding")
    }

    /// Holds the deposits of open appeals.
    pub fn verify_appeals() -> Address {
        Address::module("verify_appeals")
    }
}

/// Domain prefix of a challenge commitment.
pub const CHALLENGE_DOMAIN: &[u8] = b"gpuchain/verify/challenge/v1";

/// The commitment a verifier posts before a ringer: `blake3(CHALLENGE_DOMAIN ‖ poster (20
/// bytes) ‖ expected_output_hash ‖ salt)`.
pub fn challenge_commitment(
    poster: &Address,
    expected_output_hash: &[u8; 32],
    salt: &[u8; 32],
) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    hasher.update(CHALLENGE_DOMAIN);
    hasher.update(&poster.0);
    hasher.update(expected_output_hash);
    hasher.update(salt);
    *hasher.finalize().as_bytes()
}

/// A registered verifier.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct Verifier {
    /// Account that registered and signs its verdicts.
    pub operator: Address,
    /// ugpu bonded (held by `verify_bonded`).
    pub bonded: Amount,
    /// Not drawn and may not commit challenges before this height.
    pub jailed_until: u64,
    /// Registered at.
    pub registered_height: u64,
    /// Cases it serves on that are not settled yet (it may not unbond below the minimum
    /// while this is positive).
    pub open_cases: u64,
    /// Committed, unrevealed challenges.
    pub open_challenges: u32,
    /// Verdicts posted.
    pub verdicts: u64,
    /// Deadlines missed.
    pub misses: u64,
    /// Verdicts overturned by other verifiers.
    pub overturned: u64,
}

impl Verifier {
    /// Whether it may be drawn or commit challenges at `height`.
    pub fn is_eligible(&self, min_stake: Amount, height: u64) -> bool {
        self.bonded >= min_stake && self.jailed_until <= height
    }
}

/// Where a case is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum CaseStage {
    /// Variant 0: a verifier is assigned and must post by `deadline_height`.
    AwaitingVerdict,
    /// Variant 1: the first verdict stands unless appealed by `appeal_end_height`.
    AppealWindow,
    /// Variant 2: settled (or closed with no verdict).
    Closed,
}

/// A verdict as posted.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct PostedVerdict {
    /// Who posted it.
    pub verifier: Address,
    /// The verifier's output hash (the expected hash, for a challenge).
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub output_hash: [u8; 32],
    /// Its finding.
    pub verdict: VerdictKind,
    /// Posted at.
    pub height: u64,
}

/// How a case ended.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum CaseOutcome {
    /// Variant 0: not settled yet.
    Open,
    /// Variant 1: this verdict stood and was applied.
    Settled(VerdictKind),
    /// Variant 2: no verdict could be obtained; the auction's fallback applies.
    NoVerdict,
}

/// The verification of one lease: its rounds, verdicts and appeal.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct Case {
    /// Lease (also the case's id).
    pub lease_id: u64,
    /// Order of the lease.
    pub order_id: u64,
    /// Provider of the lease.
    pub provider: Address,
    /// Client of the order.
    pub client: Address,
    /// 0: first verdict; 1: appeal; 2: tie-break.
    pub round: u8,
    /// Stage.
    pub stage: CaseStage,
    /// The verifier assigned to the current round, while `AwaitingVerdict`.
    pub assignee: Option<Address>,
    /// Last height the assignee's verdict is taken.
    pub deadline_height: u64,
    /// Whether the current round was already reassigned after a miss.
    pub reassigned: bool,
    /// Verdicts posted so far, in order (at most one per round).
    pub verdicts: Vec<PostedVerdict>,
    /// End of the appeal window of the first verdict.
    pub appeal_end_height: Option<u64>,
    /// Who appealed.
    pub appellant: Option<Address>,
    /// Locked appeal deposit.
    pub deposit: Amount,
    /// Verifiers that served on (or missed) this case: never drawn for it again.
    pub served: Vec<Address>,
    /// The challenge this case came from, if a ringer failed.
    pub challenge_id: Option<u64>,
    /// How it ended.
    pub outcome: CaseOutcome,
}

/// An audit fee the verification pool could not pay yet (over its per-block outflow cap or
/// its balance); paid first, oldest first, in later blocks.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct OwedFee {
    /// Queue position.
    pub id: u64,
    /// The case's lease.
    pub lease_id: u64,
    /// Who is owed.
    pub verifier: Address,
    /// What is still owed, ugpu.
    pub amount: Amount,
}

/// A committed challenge (ringer).
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct Challenge {
    /// Unique, increasing id.
    pub id: u64,
    /// Verifier that committed it.
    pub verifier: Address,
    /// See [`challenge_commitment`].
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub commitment: [u8; 32],
    /// Committed at; the ringer order must be posted at a greater height.
    pub height: u64,
    /// Deleted (unrevealed) in the end-block of this height.
    pub expires_height: u64,
}

/// Verifier stake waiting out the unbonding period.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct VerifierUnbonding {
    /// Unique, increasing id.
    pub id: u64,
    /// Paid to.
    pub owner: Address,
    /// ugpu.
    pub amount: Amount,
    /// Released in the end-block of this height.
    pub completion_height: u64,
}
