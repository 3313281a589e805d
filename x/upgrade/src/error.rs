use gpuchain_types::{Address, ModuleError};

/// Why an upgrade message failed, or why this binary must not execute a block.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UpgradeError {
    /// Only operators of validators in the active set signal.
    #[error("{0} operates no validator in the active set; only active validators signal upgrades")]
    NotAnActiveValidator(Address),
    /// A name outside the allowed alphabet or length.
    #[error("upgrade name {0:?} must be 1 to 64 characters of a-z, 0-9, '.', '-' and '_'")]
    InvalidName(String),
    /// A plan too close to (or before) the current height.
    #[error("upgrade height {height} is too soon: it must be at least {min} (this block is {now}, and operators need {} blocks to install a binary)", crate::MIN_UPGRADE_DELAY_BLOCKS)]
    TooSoon {
        /// Requested height.
        height: u64,
        /// Earliest allowed.
        min: u64,
        /// This block.
        now: u64,
    },
    /// A name that already ran.
    #[error("upgrade {name:?} was already applied at height {height}")]
    AlreadyApplied {
        /// Its name.
        name: String,
        /// Where it ran.
        height: u64,
    },
    /// Withdrawing a signal that was never made.
    #[error("{0} has no upgrade signal to withdraw")]
    NoSignal(Address),
    /// A height that does not fit.
    #[error("arithmetic overflow")]
    Overflow,
    /// The chain reached a plan this binary has no migration for.
    #[error("UPGRADE {name:?} NEEDED at height {height}: this binary does not register it; stop this node, install the release that does, and start it again (docs/operations.md)")]
    Needed {
        /// The plan's name.
        name: String,
        /// Its height.
        height: u64,
    },
    /// The new binary was started before its plan's height.
    #[error("this binary is the release for upgrade {name:?} at height {height}, and the chain is at {now}: run the previous release until the chain halts there")]
    TooEarly {
        /// The plan's name.
        name: String,
        /// Its height.
        height: u64,
        /// The block about to run.
        now: u64,
    },
    /// State changed by an upgrade this binary predates.
    #[error("the state was upgraded by {name:?} at height {height}, which this binary does not register: run that release or a later one")]
    UnknownApplied {
        /// The applied upgrade.
        name: String,
        /// Where it ran.
        height: u64,
    },
    /// A plan whose height passed without running: a broken invariant.
    #[error("upgrade {name:?} planned for height {height} never ran")]
    Missed {
        /// The plan's name.
        name: String,
        /// Its height.
        height: u64,
    },
}

impl ModuleError for UpgradeError {
    fn codespace(&self) -> &'static str {
        "upgrade"
    }

    fn code(&self) -> u32 {
        match self {
            UpgradeError::NotAnActiveValidator(_) => 1,
            UpgradeError::InvalidName(_) => 2,
            UpgradeError::TooSoon { .. } => 3,
            UpgradeError::AlreadyApplied { .. } => 4,
            UpgradeError::NoSignal(_) => 5,
            UpgradeError::Overflow => 6,
            UpgradeError::Needed { .. } => 7,
            UpgradeError::TooEarly { .. } => 8,
            UpgradeError::UnknownApplied { .. } => 9,
            UpgradeError::Missed { .. } => 10,
        }
    }
}
