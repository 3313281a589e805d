use gpuchain_bank::BankError;
use gpuchain_types::{Address, Amount, ModuleError};

/// Why a slashing operation failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SlashingError {
    /// The signer operates no validator.
    #[error("{0} is not a validator")]
    NotAValidator(Address),
    /// Unjail of a validator that is not jailed.
    #[error("validator {0} is not jailed")]
    NotJailed(Address),
    /// Unjail before the jail time is served.
    #[error("validator is jailed until height {until}; this is height {height}")]
    StillJailed {
        /// First height unjail is allowed.
        until: u64,
        /// Current height.
        height: u64,
    },
    /// Tombstoned validators can never unjail.
    #[error("validator {0} is tombstoned and can never unjail")]
    Tombstoned(Address),
    /// Unjail with a self-bond below the minimum.
    #[error("self-bond {bond} ugpu is below min_self_bond {min} ugpu; bond more before unjailing")]
    BelowMinSelfBond {
        /// Bonded now.
        bond: Amount,
        /// `min_self_bond`.
        min: Amount,
    },
    /// `slash_provider` for an address that is not a provider.
    #[error("{0} is not a provider")]
    UnknownProvider(Address),
    /// A product or sum does not fit in 128 bits.
    #[error("arithmetic overflow")]
    Overflow,
    /// Parameters the module cannot run with.
    #[error("invalid slashing parameters: {0}")]
    InvalidParams(String),
    /// The bonded pool holds less than the bond being slashed: a broken invariant.
    #[error("bonded pool holds {available} ugpu, less than the {required} ugpu slashed")]
    PoolShortfall {
        /// Pool balance.
        available: Amount,
        /// Slash.
        required: Amount,
    },
    /// A bank operation failed after slashing's own checks passed: a broken invariant.
    #[error("bank: {0}")]
    Bank(#[from] BankError),
}

impl ModuleError for SlashingError {
    fn codespace(&self) -> &'static str {
        "slashing"
    }

    fn code(&self) -> u32 {
        match self {
            SlashingError::NotAValidator(_) => 1,
            SlashingError::NotJailed(_) => 2,
            SlashingError::StillJailed { .. } => 3,
            SlashingError::Tombstoned(_) => 4,
            SlashingError::BelowMinSelfBond { .. } => 5,
            SlashingError::UnknownProvider(_) => 6,
            SlashingError::Overflow => 7,
            SlashingError::InvalidParams(_) => 8,
            SlashingError::PoolShortfall { .. } => 9,
            SlashingError::Bank(_) => 10,
        }
    }
}
