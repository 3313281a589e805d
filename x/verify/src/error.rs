use gpuchain_auction::AuctionError;
use gpuchain_bank::BankError;
use gpuchain_reputation::ReputationError;
use gpuchain_types::{Address, Amount, ModuleError};

/// Why a verify operation failed. Codes 101–131 in codespace `verify` (a range no other
/// module uses, so a code alone names the module).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VerifyError {
    /// Bonds and unbonds must move something.
    #[error("amount must be positive")]
    ZeroAmount,
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
    /// A registration bond below the minimum.
    #[error("verifier bond {bond} ugpu is below min_verifier_stake {min} ugpu")]
    BelowMinStake {
        /// Offered.
        bond: Amount,
        /// `min_verifier_stake`.
        min: Amount,
    },
    /// The signer is already a verifier.
    #[error("{0} is already a verifier")]
    VerifierExists(Address),
    /// The signer is not a verifier.
    #[error("{0} is not a verifier")]
    NotAVerifier(Address),
    /// Unbonding more than is bonded.
    #[error("cannot unbond {requested} ugpu: only {bonded} ugpu is bonded")]
    InsufficientBond {
        /// Bonded.
        bonded: Amount,
        /// Asked.
        requested: Amount,
    },
    /// An unbond would leave a verifier with open cases below the minimum.
    #[error(
        "unbonding would leave {remaining} ugpu bonded, below min_verifier_stake {min} ugpu, \
         while {open_cases} cases are open"
    )]
    UnbondWithOpenCases {
        /// Bond after the unbond.
        remaining: Amount,
        /// `min_verifier_stake`.
        min: Amount,
        /// Open cases.
        open_cases: u64,
    },
    /// No verification case for this lease.
    #[error("lease {0} has no verification case")]
    NoCase(u64),
    /// The signer is not the lease's assigned verifier.
    #[error("{signer} is not the verifier assigned to lease {lease_id}")]
    NotAssigned {
        /// Lease.
        lease_id: u64,
        /// Signer.
        signer: Address,
    },
    /// A verdict after the deadline.
    #[error("verdict deadline was height {deadline}; this is height {height}")]
    VerdictTooLate {
        /// Last height.
        deadline: u64,
        /// Now.
        height: u64,
    },
    /// The case takes no verdict now.
    #[error("lease {0} is not waiting for a verdict")]
    NotAwaitingVerdict(u64),
    /// The case is not in its appeal window.
    #[error("lease {0} has no verdict open to appeal")]
    NotAppealable(u64),
    /// Appeal after the window.
    #[error("the appeal window closed at height {end}")]
    AppealWindowClosed {
        /// Last height.
        end: u64,
    },
    /// Only the party the verdict goes against may appeal.
    #[error("{0} may not appeal this verdict (only the provider against faulty, the client against honest)")]
    NotAppellant(Address),
    /// No eligible verifier to draw.
    #[error("no eligible verifier is available for lease {0}")]
    NoVerifierAvailable(u64),
    /// A jailed verifier may not commit challenges.
    #[error("verifier {verifier} is jailed until height {until}")]
    VerifierJailed {
        /// Verifier.
        verifier: Address,
        /// First free height.
        until: u64,
    },
    /// Too many open challenges.
    #[error("the verifier already has the most open challenges allowed ({0})")]
    TooManyChallenges(u32),
    /// No such (open) challenge.
    #[error("challenge {0} does not exist or was already revealed or expired")]
    UnknownChallenge(u64),
    /// Only the committing verifier may reveal.
    #[error("{0} did not commit this challenge")]
    NotChallengeOwner(Address),
    /// The reveal does not open the commitment with the order's client as poster.
    #[error(
        "blake3(domain, order client, expected_output_hash, salt) does not match the commitment"
    )]
    ChallengeMismatch,
    /// The commitment does not predate the order.
    #[error("challenge committed at height {committed}, not before the order posted at {posted}")]
    ChallengeNotBeforeOrder {
        /// Commit height.
        committed: u64,
        /// Order height.
        posted: u64,
    },
    /// No such order.
    #[error("order {0} does not exist")]
    UnknownOrder(u64),
    /// The order's leases have not all revealed and been judged.
    #[error("order {0} has no leases, or leases that have not revealed and been judged yet")]
    OrderNotJudged(u64),
    /// An order can be the subject of one challenge only.
    #[error("order {0} was already challenged")]
    OrderAlreadyChallenged(u64),
    /// A product or sum does not fit.
    #[error("arithmetic overflow")]
    Overflow,
    /// Parameters the module cannot run with.
    #[error("invalid verify parameters: {0}")]
    InvalidParams(String),
    /// A bank operation failed after the module's own checks: a broken invariant.
    #[error("bank: {0}")]
    Bank(#[from] BankError),
    /// The auction refused a verdict or hold after the module's checks: a broken invariant.
    #[error("auction: {0}")]
    Auction(#[from] AuctionError),
    /// A reputation update failed: a broken invariant.
    #[error("reputation: {0}")]
    Reputation(#[from] ReputationError),
}

impl ModuleError for VerifyError {
    fn codespace(&self) -> &'static str {
        "verify"
    }

    fn code(&self) -> u32 {
        match self {
            VerifyError::ZeroAmount => 101,
            VerifyError::InsufficientFunds { .. } => 102,
            VerifyError::BelowMinStake { .. } => 103,
            VerifyError::VerifierExists(_) => 104,
            VerifyError::NotAVerifier(_) => 105,
            VerifyError::InsufficientBond { .. } => 106,
            VerifyError::UnbondWithOpenCases { .. } => 107,
            VerifyError::NoCase(_) => 108,
            VerifyError::NotAssigned { .. } => 109,
            VerifyError::VerdictTooLate { .. } => 110,
            VerifyError::NotAwaitingVerdict(_) => 111,
            VerifyError::NotAppealable(_) => 112,
            VerifyError::AppealWindowClosed { .. } => 113,
            VerifyError::NotAppellant(_) => 114,
            VerifyError::NoVerifierAvailable(_) => 115,
            VerifyError::VerifierJailed { .. } => 116,
            VerifyError::TooManyChallenges(_) => 117,
            VerifyError::UnknownChallenge(_) => 118,
            VerifyError::NotChallengeOwner(_) => 119,
            VerifyError::ChallengeMismatch => 120,
            VerifyError::ChallengeNotBeforeOrder { .. } => 121,
            VerifyError::UnknownOrder(_) => 122,
            VerifyError::OrderNotJudged(_) => 123,
            VerifyError::OrderAlreadyChallenged(_) => 124,
            VerifyError::Overflow => 125,
            VerifyError::InvalidParams(_) => 126,
            VerifyError::Bank(_) => 127,
            VerifyError::Auction(_) => 128,
            VerifyError::Reputation(_) => 129,
        }
    }
}
