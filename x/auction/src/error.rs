use gpuchain_bank::BankError;
use gpuchain_reputation::ReputationError;
use gpuchain_slashing::SlashingError;
use gpuchain_staking::StakingError;
use gpuchain_types::{Address, Amount, ModuleError};

use crate::{LeaseState, OrderState};

/// Why an auction operation failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuctionError {
    /// The job spec breaks a limit.
    #[error("invalid job spec: {0}")]
    InvalidJob(String),
    /// `replicas` outside 1..=5.
    #[error("replicas must be 1..=5, got {0}")]
    Replicas(u32),
    /// A zero price.
    #[error("price must be positive")]
    ZeroPrice,
    /// Max price above the limit.
    #[error("max price {price} ugpu is above the limit {limit} ugpu")]
    PriceAboveLimit {
        /// Asked.
        price: Amount,
        /// `max_price_per_replica_limit`.
        limit: Amount,
    },
    /// Bid window zero or too long.
    #[error("bid_window_blocks must be 1..={max}, got {got}")]
    BidWindow {
        /// Asked.
        got: u64,
        /// `max_bid_window_blocks`.
        max: u64,
    },
    /// Execution deadline zero or too long.
    #[error("exec_deadline_blocks must be 1..={max}, got {got}")]
    ExecDeadline {
        /// Asked.
        got: u64,
        /// `max_exec_deadline_blocks`.
        max: u64,
    },
    /// A text requirement is empty, too long, or not printable ASCII.
    #[error("requirement {field} must be 1..={max} bytes of printable ASCII")]
    RequirementText {
        /// Which field.
        field: &'static str,
        /// `max_text_len`.
        max: u32,
    },
    /// A lease can be handed back only up to its commit deadline; after it, it is missed.
    #[error("lease can be released up to height {deadline}; it is {height}")]
    ReleaseTooLate {
        /// The lease's commit deadline.
        deadline: u64,
        /// Current height.
        height: u64,
    },
    /// The signer cannot pay.
    #[error("insufficient funds: {address} has {available} ugpu, needs {required} ugpu")]
    InsufficientFunds {
        /// Payer.
        address: Address,
        /// Its balance.
        available: Amount,
        /// What is needed.
        required: Amount,
    },
    /// A product or sum does not fit.
    #[error("arithmetic overflow")]
    Overflow,
    /// No such order.
    #[error("order {0} does not exist")]
    UnknownOrder(u64),
    /// Only the client may cancel.
    #[error("{0} did not post this order")]
    NotOrderClient(Address),
    /// The order no longer takes bids or cancellations.
    #[error("order {id} is {state:?}, not open")]
    OrderNotOpen {
        /// Order.
        id: u64,
        /// Its state.
        state: OrderState,
    },
    /// Bid after the window.
    #[error("the bid window of order {id} ended at height {end}")]
    BidWindowClosed {
        /// Order.
        id: u64,
        /// Last bid height.
        end: u64,
    },
    /// Not registered, bonded below the minimum, or jailed.
    #[error("{0} is not an eligible provider (registered, bonded, not jailed)")]
    NotEligible(Address),
    /// The provider's hardware does not meet the order.
    #[error("provider {0} does not meet the order's hardware requirements")]
    RequirementsNotMet(Address),
    /// Bid above the order's max price.
    #[error("bid {price} ugpu is above the max price {max} ugpu")]
    PriceAboveMax {
        /// Bid.
        price: Amount,
        /// Order's max.
        max: Amount,
    },
    /// One bid per provider.
    #[error("{0} already bid on this order")]
    DuplicateBid(Address),
    /// The order has all the bids it takes.
    #[error("the order already has the most bids allowed ({0})")]
    TooManyBids(u32),
    /// A client may not bid on its own order.
    #[error("a client may not bid on its own order")]
    SelfBid,
    /// No such lease.
    #[error("lease {0} does not exist")]
    UnknownLease(u64),
    /// Only the lease's provider may commit or reveal.
    #[error("{0} does not hold this lease")]
    NotLeaseProvider(Address),
    /// The lease is not in a state that takes this message.
    #[error("lease {id} is {state:?}")]
    WrongLeaseState {
        /// Lease.
        id: u64,
        /// Its state.
        state: LeaseState,
    },
    /// Commit after the deadline.
    #[error("commit deadline was height {deadline}; this is height {height}")]
    CommitTooLate {
        /// Last commit height.
        deadline: u64,
        /// Now.
        height: u64,
    },
    /// Reveal before every replica committed and before the deadline passed.
    #[error("reveal too early: wait until every replica committed or height {deadline} passed")]
    RevealTooEarly {
        /// Commit deadline.
        deadline: u64,
    },
    /// Reveal after the reveal window.
    #[error("reveal window closed at height {end}")]
    RevealTooLate {
        /// Last reveal height.
        end: u64,
    },
    /// The reveal does not open the commitment (e.g. a copied hash).
    #[error("blake3(result_hash, provider, salt) does not match the commitment")]
    CommitmentMismatch,
    /// Nothing to withdraw.
    #[error("{0} has no rewards to withdraw")]
    NoRewards(Address),
    /// A second comparison for the same lease.
    #[error("lease {0} already stated its comparison")]
    AlreadyCompared(u64),
    /// A second receipt for the same lease.
    #[error("lease {0}'s receipt was already confirmed")]
    AlreadyConfirmed(u64),
    /// A verdict for a lease that is not waiting for one.
    #[error("lease {0} is not waiting for a verdict")]
    VerdictNotPending(u64),
    /// Parameters the module cannot run with.
    #[error("invalid auction parameters: {0}")]
    InvalidParams(String),
    /// A bank operation failed after the module's own checks: a broken invariant.
    #[error("bank: {0}")]
    Bank(#[from] BankError),
    /// A staking operation failed: a broken invariant.
    #[error("staking: {0}")]
    Staking(#[from] StakingError),
    /// A slash failed: a broken invariant.
    #[error("slashing: {0}")]
    Slashing(#[from] SlashingError),
    /// A reputation update failed: a broken invariant.
    #[error("reputation: {0}")]
    Reputation(#[from] ReputationError),
}

impl ModuleError for AuctionError {
    fn codespace(&self) -> &'static str {
        "auction"
    }

    fn code(&self) -> u32 {
        match self {
            AuctionError::InvalidJob(_) => 1,
            AuctionError::Replicas(_) => 2,
            AuctionError::ZeroPrice => 3,
            AuctionError::PriceAboveLimit { .. } => 4,
            AuctionError::BidWindow { .. } => 5,
            AuctionError::ExecDeadline { .. } => 6,
            AuctionError::RequirementText { .. } => 7,
            AuctionError::InsufficientFunds { .. } => 8,
            AuctionError::Overflow => 9,
            AuctionError::UnknownOrder(_) => 10,
            AuctionError::NotOrderClient(_) => 11,
            AuctionError::OrderNotOpen { .. } => 12,
            AuctionError::BidWindowClosed { .. } => 13,
            AuctionError::NotEligible(_) => 14,
            AuctionError::RequirementsNotMet(_) => 15,
            AuctionError::PriceAboveMax { .. } => 16,
            AuctionError::DuplicateBid(_) => 17,
            AuctionError::TooManyBids(_) => 18,
            AuctionError::SelfBid => 19,
            AuctionError::UnknownLease(_) => 20,
            AuctionError::NotLeaseProvider(_) => 21,
            AuctionError::WrongLeaseState { .. } => 22,
            AuctionError::CommitTooLate { .. } => 23,
            AuctionError::RevealTooEarly { .. } => 24,
            AuctionError::RevealTooLate { .. } => 25,
            AuctionError::CommitmentMismatch => 26,
            AuctionError::NoRewards(_) => 27,
            AuctionError::VerdictNotPending(_) => 28,
            AuctionError::InvalidParams(_) => 29,
            AuctionError::Bank(_) => 30,
            AuctionError::Staking(_) => 31,
            AuctionError::Slashing(_) => 32,
            AuctionError::Reputation(_) => 33,
            AuctionError::ReleaseTooLate { .. } => 34,
            AuctionError::AlreadyCompared(_) => 35,
            AuctionError::AlreadyConfirmed(_) => 36,
        }
    }
}
