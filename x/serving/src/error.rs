use gpuchain_types::{Address, Amount, ModuleError};

/// Why a serving message failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ServingError {
    /// Parameters the module cannot run with.
    #[error("invalid serving parameters: {0}")]
    InvalidParams(String),
    /// A malformed order.
    #[error("invalid serving order: {0}")]
    InvalidOrder(String),
    /// No such order.
    #[error("unknown serving order {0}")]
    UnknownOrder(u64),
    /// No such lease.
    #[error("unknown serving lease {0}")]
    UnknownLease(u64),
    /// No such claim.
    #[error("unknown serving claim {0}")]
    UnknownClaim(u64),
    /// Bids only while an order is open for them.
    #[error("serving order {id} takes no bids: its bid window ended at height {end}")]
    BidWindowClosed {
        /// Order.
        id: u64,
        /// Last bid height.
        end: u64,
    },
    /// Not a provider in good standing.
    #[error(
        "{0} is not an eligible provider (registered, bonded at least the minimum, not jailed)"
    )]
    NotEligible(Address),
    /// A client's own bid.
    #[error("a client cannot bid on its own order")]
    SelfBid,
    /// A zero price.
    #[error("price must be positive")]
    ZeroPrice,
    /// Above the ceiling.
    #[error("price {price} is above the order's ceiling {max}")]
    PriceAboveMax {
        /// Asked.
        price: Amount,
        /// Ceiling.
        max: Amount,
    },
    /// A second bid.
    #[error("{0} already bid on this order")]
    DuplicateBid(Address),
    /// The region does not match.
    #[error("{0} is not in the order's region")]
    WrongRegion(Address),
    /// Someone else's order, lease or claim.
    #[error("{signer} may not do this: only {allowed} may")]
    NotAllowed {
        /// Who tried.
        signer: Address,
        /// Who may.
        allowed: &'static str,
    },
    /// The order is over.
    #[error("serving order {0} is closed")]
    OrderClosed(u64),
    /// The lease takes no more claims or reports.
    #[error("serving lease {0} is closed")]
    LeaseClosed(u64),
    /// A claim that does not continue the lease's receipts.
    #[error("claim starts at receipt {got} but lease {lease_id} expects receipt {expected} next (a batch is claimed once, in order)")]
    WrongSequence {
        /// Lease.
        lease_id: u64,
        /// Next unclaimed receipt.
        expected: u64,
        /// Claimed start.
        got: u64,
    },
    /// An empty or zero-value claim.
    #[error("a claim needs at least one receipt and one unit, and must be worth at least 1 ugpu")]
    EmptyClaim,
    /// The client's acknowledgement does not check.
    #[error("the acknowledgement is not signed by lease {0}'s client for this batch")]
    BadAcknowledgement(u64),
    /// More than the deposit holds.
    #[error("claim of {amount} ugpu plus its audit reserve {reserve} exceeds the {available} ugpu left in the order's deposit")]
    ClaimOverDeposit {
        /// Claim.
        amount: Amount,
        /// Audit reserve.
        reserve: Amount,
        /// Deposit left.
        available: Amount,
    },
    /// More than the provider's bond can answer for.
    #[error("claim of {amount} ugpu exceeds {max} ugpu, the most the provider's bond backs per claim; claim smaller batches or bond more")]
    ClaimOverBond {
        /// Claim.
        amount: Amount,
        /// Largest claim.
        max: Amount,
    },
    /// A report while one is open, or after the lease's end.
    #[error("lease {0} cannot be reported now (a report is open, or it is no longer serving)")]
    CannotReport(u64),
    /// A heartbeat nobody asked for.
    #[error("lease {0} has no open report to answer")]
    NoReport(u64),
    /// A reveal the claim does not wait for.
    #[error("claim {0} is not waiting for a revealed receipt")]
    NotAwaitingReveal(u64),
    /// A revealed receipt that is not the drawn one, or whose bodies do not match.
    #[error("revealed receipt does not check: {0}")]
    BadReveal(String),
    /// A verdict from someone not assigned.
    #[error("{0} is not the verifier assigned to this claim")]
    NotAssigned(Address),
    /// Bank failure (insufficient funds).
    #[error(transparent)]
    Bank(#[from] gpuchain_bank::BankError),
    /// Slashing failure.
    #[error(transparent)]
    Slashing(#[from] gpuchain_slashing::SlashingError),
    /// Staking failure.
    #[error(transparent)]
    Staking(#[from] gpuchain_staking::StakingError),
    /// Verifier failure.
    #[error(transparent)]
    Verify(#[from] gpuchain_verify::VerifyError),
    /// Checked arithmetic failed.
    #[error("arithmetic overflow")]
    Overflow,
    /// An appeal of a claim whose verdict is not standing, or after its window.
    #[error("claim {0} has no standing verdict open to appeal (never judged, already appealed, or its appeal window passed)")]
    NotAppealable(u64),
    /// A verifier's list of models that is too long or names one twice.
    #[error("a verifier declares at most {max} serving models, each once (got {got}, {distinct} distinct)")]
    BadModelList {
        /// Most allowed.
        max: usize,
        /// Listed.
        got: usize,
        /// Distinct.
        distinct: usize,
    },
    /// An order nobody could audit.
    #[error("no verifier could judge model {0} (blake3) for this client (none eligible has declared it with `serving models`, apart from the client and verifiers it funded first): its claims could not be audited, so the order is refused")]
    NoJudge(String),
    /// A bid's endpoint that is not a usable URL.
    #[error("serving endpoint `{0}` must be an http:// or https:// URL of at most 256 bytes without spaces")]
    BadEndpoint(String),
}

impl ModuleError for ServingError {
    fn codespace(&self) -> &'static str {
        "serving"
    }

    fn code(&self) -> u32 {
        match self {
            ServingError::InvalidParams(_) => 1,
            ServingError::InvalidOrder(_) => 2,
            ServingError::UnknownOrder(_) => 3,
            ServingError::UnknownLease(_) => 4,
            ServingError::UnknownClaim(_) => 5,
            ServingError::BidWindowClosed { .. } => 6,
            ServingError::NotEligible(_) => 7,
            ServingError::SelfBid => 8,
            ServingError::ZeroPrice => 9,
            ServingError::PriceAboveMax { .. } => 10,
            ServingError::DuplicateBid(_) => 11,
            ServingError::WrongRegion(_) => 12,
            ServingError::NotAllowed { .. } => 13,
            ServingError::OrderClosed(_) => 14,
            ServingError::LeaseClosed(_) => 15,
            ServingError::WrongSequence { .. } => 16,
            ServingError::EmptyClaim => 17,
            ServingError::BadAcknowledgement(_) => 18,
            ServingError::ClaimOverDeposit { .. } => 19,
            ServingError::ClaimOverBond { .. } => 20,
            ServingError::CannotReport(_) => 21,
            ServingError::NoReport(_) => 22,
            ServingError::NotAwaitingReveal(_) => 23,
            ServingError::BadReveal(_) => 24,
            ServingError::NotAssigned(_) => 25,
            ServingError::Overflow => 26,
            ServingError::Bank(_) => 27,
            ServingError::Slashing(_) => 28,
            ServingError::Staking(_) => 29,
            ServingError::Verify(_) => 30,
            ServingError::BadEndpoint(_) => 31,
            ServingError::NotAppealable(_) => 32,
            ServingError::BadModelList { .. } => 33,
            ServingError::NoJudge(_) => 34,
        }
    }
}
