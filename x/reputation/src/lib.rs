//! x/reputation: one score per compute provider in parts per million (0 = worst,
//! 1,000,000 = best, [`NEUTRAL_PPM`] for a newcomer). Each outcome moves the score by an
//! exponentially weighted step ([`ReputationParams`]): an accepted result or passed challenge
//! moves it `up_ppm` of the way toward 1,000,000, a proven fault or missed deadline moves it
//! the fault's ppm of the way toward 0. Between events the distance to neutral halves every
//! `half_life_blocks`, linearly interpolated within a half-life ([`decay`]), all in integers.
//! Every change leaves a [`HistoryEntry`] (the newest `max_history` are kept). The auction
//! ranks bids and the verification module samples audits by [`ReputationRead::score`].

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
mod genesis;
mod params;
pub mod state_key;
mod view;

pub use error::ReputationError;
pub use events::ReputationChangedEvent;
pub use genesis::ReputationGenesis;
pub use params::ReputationParams;
pub use view::{ReputationRead, ReputationWrite};

use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_types::{Ppm, PPM_ONE};
use serde::{Deserialize, Serialize};

/// Score of a provider with no record, and the point scores decay toward.
pub const NEUTRAL_PPM: Ppm = 500_000;

/// What happened to a provider.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Variant 0: a result was accepted and paid after its challenge window.
    Accepted,
    /// Variant 1: a planted challenge or audit was answered correctly.
    ChallengePassed,
    /// Variant 2: a result was proven wrong.
    Fault,
    /// Variant 3: no commit or reveal by the deadline.
    MissedDeadline,
}

impl Outcome {
    /// A short name for events.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::ChallengePassed => "challenge_passed",
            Outcome::Fault => "fault",
            Outcome::MissedDeadline => "missed_deadline",
        }
    }

    /// Whether it counts against the provider (breaks a clean record).
    pub fn is_bad(&self) -> bool {
        matches!(self, Outcome::Fault | Outcome::MissedDeadline)
    }
}

/// A provider's stored reputation. `score_ppm` is as of `updated_height`; reads decay it to
/// the current height.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct Reputation {
    /// Score at `updated_height`.
    pub score_ppm: Ppm,
    /// Height of the last change.
    pub updated_height: u64,
    /// Accepted results.
    pub accepted: u64,
    /// Passed challenges.
    pub challenges_passed: u64,
    /// Proven faults.
    pub faults: u64,
    /// Missed deadlines.
    pub missed: u64,
    /// Height of the last fault or missed deadline.
    pub last_bad_height: Option<u64>,
    /// Next history sequence number.
    pub next_seq: u64,
}

impl Default for Reputation {
    fn default() -> Self {
        Reputation {
            score_ppm: NEUTRAL_PPM,
            updated_height: 0,
            accepted: 0,
            challenges_passed: 0,
            faults: 0,
            missed: 0,
            last_bad_height: None,
            next_seq: 0,
        }
    }
}

/// One change of a provider's score.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// Per-provider sequence number.
    pub seq: u64,
    /// Height it happened at.
    pub height: u64,
    /// What happened.
    pub outcome: Outcome,
    /// Score just before (after decay to `height`).
    pub before_ppm: Ppm,
    /// Score after.
    pub after_ppm: Ppm,
}

/// `score` decayed toward [`NEUTRAL_PPM`] over `blocks`: the distance `d` halves once per
/// whole `half_life_blocks` (`d >> n`), and within the remaining `r` blocks of a half-life it
/// shrinks linearly by `d' * r / (2 * half_life)`, so the curve is continuous and monotone.
/// A zero half-life disables decay. Integer-only; never overflows.
pub fn decay(score: Ppm, blocks: u64, half_life_blocks: u64) -> Ppm {
    if half_life_blocks == 0 || blocks == 0 {
        return score;
    }
    let score = score.min(PPM_ONE);
    let (above, distance) = if score >= NEUTRAL_PPM {
        (true, u64::from(score.saturating_sub(NEUTRAL_PPM)))
    } else {
        (false, u64::from(NEUTRAL_PPM.saturating_sub(score)))
    };
    let halvings = blocks.checked_div(half_life_blocks).unwrap_or(0);
    let rest = blocks.checked_rem(half_life_blocks).unwrap_or(0);
    let halved = if halvings >= 64 {
        0
    } else {
        distance >> halvings
    };
    let span = u128::from(half_life_blocks).saturating_mul(2);
    let shrink = u128::from(halved)
        .saturating_mul(u128::from(rest))
        .checked_div(span)
        .unwrap_or(0);
    let left = u128::from(halved).saturating_sub(shrink);
    let left = Ppm::try_from(left).unwrap_or(0);
    if above {
        NEUTRAL_PPM.saturating_add(left)
    } else {
        NEUTRAL_PPM.saturating_sub(left)
    }
}

/// The score after `outcome`: up moves `up_ppm` of the distance to 1,000,000 (rounded down),
/// down moves the outcome's ppm of the distance to 0 (rounded up). Stays within 0..=1,000,000.
pub fn apply(score: Ppm, outcome: Outcome, params: &ReputationParams) -> Ppm {
    let score = u64::from(score.min(PPM_ONE));
    let one = u64::from(PPM_ONE);
    // Up steps round down and down steps round up, so a bad outcome always costs something.
    let step = |distance: u64, ppm: Ppm| {
        distance
            .saturating_mul(u64::from(ppm.min(PPM_ONE)))
            .checked_div(one)
            .unwrap_or(0)
    };
    let step_up_rounded = |distance: u64, ppm: Ppm| {
        distance
            .saturating_mul(u64::from(ppm.min(PPM_ONE)))
            .div_ceil(one)
    };
    let new = match outcome {
        Outcome::Accepted => {
            score.saturating_add(step(one.saturating_sub(score), params.accepted_up_ppm))
        }
        Outcome::ChallengePassed => {
            score.saturating_add(step(one.saturating_sub(score), params.challenge_up_ppm))
        }
        Outcome::Fault => score.saturating_sub(step_up_rounded(score, params.fault_down_ppm)),
        Outcome::MissedDeadline => {
            score.saturating_sub(step_up_rounded(score, params.missed_down_ppm))
        }
    };
    Ppm::try_from(new.min(one)).unwrap_or(PPM_ONE)
}

#[cfg(test)]
mod tests;
