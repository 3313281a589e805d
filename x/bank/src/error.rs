use gpuchain_types::{Address, Amount, ModuleError};

/// Why a bank operation failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BankError {
    /// The sender holds less than it tries to move.
    #[error("insufficient funds: {address} has {available} ugpu, needs {required} ugpu")]
    InsufficientFunds {
        /// Account that lacks the funds.
        address: Address,
        /// Its balance.
        available: Amount,
        /// What the operation needs.
        required: Amount,
    },
    /// A sum of amounts does not fit in 128 bits.
    #[error("amount overflow: the amounts add up to more than 2^128-1 ugpu")]
    Overflow,
    /// Zero-value transfers are refused, so every transfer moves something.
    #[error("amount must be positive")]
    ZeroAmount,
    /// A multi-send with no outputs, or more than the parameter allows.
    #[error("a multi-send needs 1 to {max} outputs, got {got}")]
    OutputCount {
        /// Outputs in the message.
        got: usize,
        /// `max_multi_send_outputs`.
        max: u32,
    },
}

impl ModuleError for BankError {
    fn codespace(&self) -> &'static str {
        "bank"
    }

    fn code(&self) -> u32 {
        match self {
            BankError::InsufficientFunds { .. } => 1,
            BankError::Overflow => 2,
            BankError::ZeroAmount => 3,
            BankError::OutputCount { .. } => 4,
        }
    }
}
