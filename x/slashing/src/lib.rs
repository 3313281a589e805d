//! x/slashing: penalties that make misbehaviour cost stake. Validators: CometBFT misbehaviour
//! evidence (duplicate vote, light-client attack) burns `double_sign_slash_ppm` of the bond
//! and tombstones the validator ([`handle_evidence`]); missing more than `max_missed_blocks`
//! of the last `signed_blocks_window` blocks jails it for `jail_blocks` and burns
//! `downtime_slash_ppm` ([`handle_commit_info`]); `MsgUnjail` brings it back afterwards.
//! Providers: [`slash_provider`], called by the market and verification modules, takes the
//! fault's ppm of the provider's bond, pays the harmed client (for a wrong result only) and
//! the prover their shares,
//! burns the rest and jails the provider so it cannot bid. Every slash leaves a
//! [`SlashRecord`] in state and events behind.

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

mod error;
mod events;
mod evidence;
mod genesis;
pub mod handler;
mod jail;
mod liveness;
mod msgs;
mod params;
mod provider;
#[cfg(test)]
mod simulation_tests;
pub mod state_key;
mod view;

pub use error::SlashingError;
pub use events::{JailEvent, SlashEvent, TombstoneEvent, UnjailEvent};
pub use evidence::handle_evidence;
pub use genesis::SlashingGenesis;
pub use liveness::handle_commit_info;
pub use msgs::{MsgUnjail, SlashingMsg};
pub use params::{SlashingParams, MAX_SIGNED_BLOCKS_WINDOW};
pub use provider::{slash_provider, FaultCosts};
pub use view::{SlashingRead, SlashingWrite};

use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_staking::ConsensusAddress;
use gpuchain_types::{Address, Amount};
use serde::{Deserialize, Serialize};

/// The kinds of misbehaviour CometBFT reports in FinalizeBlock.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceKind {
    /// Variant 0: two conflicting votes at one height and round.
    DuplicateVote,
    /// Variant 1: a light-client attack.
    LightClientAttack,
}

/// One piece of misbehaviour evidence, already verified by CometBFT.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct Evidence {
    /// What happened.
    pub kind: EvidenceKind,
    /// CometBFT address of the offender.
    pub consensus_address: ConsensusAddress,
    /// Height of the infraction.
    pub height: u64,
}

/// A provider fault proven by the market or verification modules.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// Variant 0: a result shown wrong by re-execution or a planted challenge.
    WrongResult,
    /// Variant 1: no result by the execution deadline.
    MissedDeadline,
    /// Variant 2: a lease walked away from.
    AbandonedLease,
    /// Variant 3: a lease released or left unrevealed after another replica of the order
    /// revealed: walking away once the answer is known costs as much as a wrong result, or a
    /// provider that sees it would disagree could exit at the price of an abandonment.
    ExitAfterReveal,
}

impl FaultKind {
    /// Whether the harmed client gets `client_share_ppm` of the slash: only for a wrong
    /// result, which the provider alone decides. A lease missed, abandoned or left after
    /// another replica revealed can be the client's own doing (a training coordinator it
    /// stops, a lease it reports while flooding the endpoint); the client's payment comes
    /// back in full, and its share is burned, so that failing its providers never pays it.
    pub fn pays_the_client(self) -> bool {
        matches!(self, FaultKind::WrongResult)
    }
}

/// Why stake was slashed.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum SlashReason {
    /// Variant 0: validator misbehaviour evidence.
    DoubleSign(EvidenceKind),
    /// Variant 1: validator missed too many blocks.
    Downtime,
    /// Variant 2: provider fault.
    Provider(FaultKind),
}

impl SlashReason {
    /// A short name for events and logs.
    pub fn name(&self) -> &'static str {
        match self {
            SlashReason::DoubleSign(EvidenceKind::DuplicateVote) => "duplicate_vote",
            SlashReason::DoubleSign(EvidenceKind::LightClientAttack) => "light_client_attack",
            SlashReason::Downtime => "downtime",
            SlashReason::Provider(FaultKind::WrongResult) => "wrong_result",
            SlashReason::Provider(FaultKind::MissedDeadline) => "missed_deadline",
            SlashReason::Provider(FaultKind::AbandonedLease) => "abandoned_lease",
            SlashReason::Provider(FaultKind::ExitAfterReveal) => "exit_after_reveal",
        }
    }
}

/// Where a provider slash went. `to_client + to_prover + burned == slashed` always.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    BorshSerialize,
    BorshDeserialize,
    Serialize,
    Deserialize,
)]
pub struct SlashOutcome {
    /// Taken from the bond.
    pub slashed: Amount,
    /// Paid first, for the verification that proved the fault.
    pub to_costs: Amount,
    /// Refunded to the harmed client.
    pub to_client: Amount,
    /// Paid to whoever proved the fault.
    pub to_prover: Amount,
    /// Destroyed.
    pub burned: Amount,
}

/// A slash as stored in state, queryable by id and by subject.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct SlashRecord {
    /// Unique, increasing id.
    pub id: u64,
    /// Height of the block that slashed.
    pub height: u64,
    /// Operator of the validator or provider.
    pub subject: Address,
    /// Why.
    pub reason: SlashReason,
    /// The amounts.
    pub outcome: SlashOutcome,
    /// Refunded client, for provider faults.
    pub client: Option<Address>,
    /// Rewarded prover, if any.
    pub prover: Option<Address>,
    /// Jailed until this height (`u64::MAX` when tombstoned).
    pub jailed_until: u64,
    /// Whether this slash tombstoned a validator.
    pub tombstoned: bool,
}

/// A validator's liveness over the last `window` blocks it was expected to sign: a ring of
/// missed flags (bit `i % window` for its `i`-th block) and their count.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct SigningInfo {
    /// `signed_blocks_window` the ring was built for; a different window resets it.
    pub window: u64,
    /// Next slot of the ring.
    pub next_slot: u64,
    /// Set flags in `missed_bits`.
    pub missed: u64,
    /// `ceil(window / 8)` bytes, bit `i % 8` of byte `i / 8` is slot `i`.
    pub missed_bits: Vec<u8>,
}

impl SigningInfo {
    /// An empty ring for `window` slots.
    pub fn new(window: u64) -> Self {
        let bytes = usize::try_from(window.div_ceil(8)).unwrap_or(0);
        SigningInfo {
            window,
            next_slot: 0,
            missed: 0,
            missed_bits: vec![0; bytes],
        }
    }

    /// Records the next block; returns the updated missed count.
    pub fn record(&mut self, signed: bool) -> u64 {
        let slot = self.next_slot;
        let byte = usize::try_from(slot / 8)
            .ok()
            .and_then(|i| self.missed_bits.get_mut(i));
        if let Some(byte) = byte {
            let mask = 1u8 << (slot % 8);
            let was_missed = *byte & mask != 0;
            match (was_missed, signed) {
                (false, false) => {
                    *byte |= mask;
                    self.missed = self.missed.saturating_add(1);
                }
                (true, true) => {
                    *byte &= !mask;
                    self.missed = self.missed.saturating_sub(1);
                }
                _ => {}
            }
        }
        self.next_slot = slot
            .checked_add(1)
            .filter(|s| *s < self.window)
            .unwrap_or(0);
        self.missed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_counts_misses_over_the_last_window_only() {
        let mut info = SigningInfo::new(10);
        assert_eq!(info.missed_bits.len(), 2);
        for _ in 0..3 {
            info.record(false);
        }
        for _ in 0..7 {
            info.record(true);
        }
        assert_eq!(info.missed, 3);
        // The window wraps: signing again overwrites the three old misses.
        assert_eq!(info.record(true), 2);
        assert_eq!(
            info.record(false),
            2,
            "slot 1 was missed before and is missed again"
        );
        assert_eq!(info.record(true), 1);
        assert_eq!(info.record(true), 1, "slot 3 was signed before");
    }
}
