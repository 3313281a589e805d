//! x/upgrade: planned upgrades without governance. The validators themselves schedule an
//! upgrade: each active validator's operator signals a plan (a name and a height at least
//! [`MIN_UPGRADE_DELAY_BLOCKS`] ahead) with `MsgSignalUpgrade`, and once validators holding
//! more than two thirds of the active voting power signal the same plan it is scheduled.
//! The same two thirds that could halt the chain anyway decide when it changes code, and no
//! key can schedule one alone.
//!
//! At the plan's height, before the block's transactions, the application asks
//! [`begin_block`] what to do: a binary that registers a migration under the plan's name
//! runs it and records the upgrade as applied; a binary that does not halts there, so that
//! no old code executes past the height. A binary that registers the plan's migration halts
//! if started before the height (it would run new code on old blocks), and any binary halts
//! on state that an upgrade it does not know has already changed.

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
pub mod handler;
mod msgs;
pub mod state_key;
mod view;

pub use error::UpgradeError;
pub use events::{UpgradeAppliedEvent, UpgradeScheduledEvent, UpgradeSignalEvent};
pub use msgs::{MsgSignalUpgrade, MsgWithdrawSignal, UpgradeMsg};
pub use view::{UpgradeRead, UpgradeWrite};

use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_types::StateRead;
use serde::{Deserialize, Serialize};

/// Fewest blocks between the block that schedules a plan and the plan's height: time for
/// every operator to install the new binary.
pub const MIN_UPGRADE_DELAY_BLOCKS: u64 = 10;

/// Longest upgrade name.
pub const MAX_NAME_BYTES: usize = 64;

/// An upgrade: the migration registered under `name` runs at the start of block `height`.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct Plan {
    /// Name the new binary registers its migration under (`v0.2.0`, `memo-1k`).
    pub name: String,
    /// First block the new binary executes.
    pub height: u64,
}

/// An upgrade that ran.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct AppliedUpgrade {
    /// The plan's name.
    pub name: String,
    /// Height whose block ran its migration.
    pub height: u64,
}

/// Names are short, lower-case ASCII letters, digits and `.`, `-`, `_`: they appear in state
/// keys, logs and operators' release notes.
pub fn check_name(name: &str) -> Result<(), UpgradeError> {
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
    if valid {
        Ok(())
    } else {
        Err(UpgradeError::InvalidName(name.to_string()))
    }
}

/// What the block at `height` must do about upgrades, given whether this binary registers a
/// migration under a name (`knows`). `Ok(Some(plan))`: run the plan's migration now, then
/// [`record_applied`]. An error means this binary must not execute the block: the node halts
/// with the error's message, which tells the operator what to install.
pub fn begin_block(
    state: &(impl StateRead + ?Sized),
    height: u64,
    knows: impl Fn(&str) -> bool,
) -> Result<Option<Plan>, UpgradeError> {
    if let Some(unknown) = state
        .applied_upgrades()
        .into_iter()
        .find(|a| !knows(&a.name))
    {
        return Err(UpgradeError::UnknownApplied {
            name: unknown.name,
            height: unknown.height,
        });
    }
    let Some(plan) = state.upgrade_plan() else {
        return Ok(None);
    };
    match plan.height.cmp(&height) {
        std::cmp::Ordering::Equal if knows(&plan.name) => Ok(Some(plan)),
        std::cmp::Ordering::Equal => Err(UpgradeError::Needed {
            name: plan.name,
            height: plan.height,
        }),
        std::cmp::Ordering::Greater if knows(&plan.name) => Err(UpgradeError::TooEarly {
            name: plan.name,
            height: plan.height,
            now: height,
        }),
        std::cmp::Ordering::Greater => Ok(None),
        // A plan's own block always runs begin_block, and it deletes the plan.
        std::cmp::Ordering::Less => Err(UpgradeError::Missed {
            name: plan.name,
            height: plan.height,
        }),
    }
}

/// Marks `plan` applied at `height` and clears it, after its migration ran.
pub fn record_applied(
    state: &mut (impl gpuchain_types::StateWrite + ?Sized),
    plan: &Plan,
    height: u64,
) {
    state.delete_upgrade_plan();
    let applied = AppliedUpgrade {
        name: plan.name.clone(),
        height,
    };
    state.put_applied_upgrade(&applied);
    state.emit(UpgradeAppliedEvent { applied }.into());
}

#[cfg(test)]
mod tests;
