use gpuchain_types::{Amount, ModuleError};

/// Why a transaction envelope is refused. Codes live in the `tx` codespace.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum TxError {
    /// The bytes are not a borsh `Tx`.
    #[error("malformed transaction: {0}")]
    Decode(String),
    /// Bigger than `max_tx_bytes`.
    #[error("transaction is {size} bytes, the limit is {max}")]
    TooLarge {
        /// Encoded size.
        size: usize,
        /// `max_tx_bytes`.
        max: u32,
    },
    /// The signature does not verify against the public key and sign bytes.
    #[error("signature does not verify for the given public key and body")]
    BadSignature,
    /// Signed for another chain.
    #[error("wrong chain id {got:?}, this chain is {expected:?}")]
    WrongChainId {
        /// This chain.
        expected: String,
        /// In the body.
        got: String,
    },
    /// Not the signer's next nonce: a replay, or a gap.
    #[error("wrong nonce {got}: the account's next nonce is {expected}")]
    BadNonce {
        /// The account's next nonce.
        expected: u64,
        /// In the body.
        got: u64,
    },
    /// Fee below `gas_limit * min_gas_price`.
    #[error("fee {got} ugpu is below the minimum {min} ugpu for gas limit {gas_limit}")]
    FeeTooLow {
        /// Minimum fee.
        min: Amount,
        /// Offered.
        got: Amount,
        /// Declared gas limit.
        gas_limit: u64,
    },
    /// The signer cannot pay the fee.
    #[error("cannot pay fee of {fee} ugpu: balance is {balance} ugpu")]
    CannotPayFee {
        /// Fee.
        fee: Amount,
        /// Signer's spendable balance.
        balance: Amount,
    },
    /// No messages, or more than `max_msgs_per_tx`.
    #[error("a transaction carries 1 to {max} messages, got {got}")]
    MsgCount {
        /// Messages in the body.
        got: usize,
        /// `max_msgs_per_tx`.
        max: u32,
    },
    /// Gas limit below what the transaction needs.
    #[error("out of gas: needs {needed}, gas limit is {limit}")]
    OutOfGas {
        /// Intrinsic gas.
        needed: u64,
        /// Declared limit.
        limit: u64,
    },
    /// Gas limit above the block gas limit: it could never be included.
    #[error("gas limit {limit} exceeds the block gas limit {max}")]
    GasLimitTooHigh {
        /// Declared limit.
        limit: u64,
        /// `max_block_gas`.
        max: u64,
    },
    /// Memo longer than `max_memo_bytes`.
    #[error("memo is {got} bytes, the limit is {max}")]
    MemoTooLong {
        /// Memo length.
        got: usize,
        /// `max_memo_bytes`.
        max: u32,
    },
}

impl ModuleError for TxError {
    fn codespace(&self) -> &'static str {
        "tx"
    }

    fn code(&self) -> u32 {
        match self {
            TxError::Decode(_) => 1,
            TxError::TooLarge { .. } => 2,
            TxError::BadSignature => 3,
            TxError::WrongChainId { .. } => 4,
            TxError::BadNonce { .. } => 5,
            TxError::FeeTooLow { .. } => 6,
            TxError::CannotPayFee { .. } => 7,
            TxError::MsgCount { .. } => 8,
            TxError::OutOfGas { .. } => 9,
            TxError::GasLimitTooHigh { .. } => 10,
            TxError::MemoTooLong { .. } => 11,
        }
    }
}
