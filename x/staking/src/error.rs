use gpuchain_bank::BankError;
use gpuchain_types::{Address, Amount, ModuleError};

/// Why a staking operation failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StakingError {
    /// Bonds and unbonds must move something.
    #[error("amount must be positive")]
    ZeroAmount,
    /// The account cannot pay the bond.
    #[error("insufficient funds: {address} has {available} ugpu, needs {required} ugpu")]
    InsufficientFunds {
        /// Account that lacks the funds.
        address: Address,
        /// Its balance.
        available: Amount,
        /// What the bond needs.
        required: Amount,
    },
    /// Not a valid ed25519 public key, or a weak (small-order) one CometBFT must not get.
    #[error("consensus public key is not a valid ed25519 key")]
    InvalidConsensusKey,
    /// The signer already operates a validator.
    #[error("{0} already operates a validator")]
    ValidatorExists(Address),
    /// Another validator uses this consensus key.
    #[error("consensus key {0} is already in use")]
    ConsensusKeyInUse(String),
    /// A validator's self-bond would be below the minimum.
    #[error("self-bond {bond} ugpu is below min_self_bond {min} ugpu")]
    BelowMinSelfBond {
        /// The bond after the operation.
        bond: Amount,
        /// `min_self_bond`.
        min: Amount,
    },
    /// The signer operates no validator.
    #[error("{0} is not a validator")]
    NotAValidator(Address),
    /// Unbonding more than is bonded.
    #[error("cannot unbond {requested} ugpu: only {bonded} ugpu is bonded")]
    InsufficientBond {
        /// Bonded now.
        bonded: Amount,
        /// Asked for.
        requested: Amount,
    },
    /// Tombstoned validators can only unbond.
    #[error("validator {0} is tombstoned")]
    ValidatorTombstoned(Address),
    /// Moniker empty or too long.
    #[error("moniker has {len} bytes, must be 1..={max}")]
    MonikerLength {
        /// Its length.
        len: usize,
        /// `max_moniker_len`.
        max: u32,
    },
    /// A text field holds control or non-ASCII characters.
    #[error("{field} may hold only printable ASCII")]
    BadCharacters {
        /// Which field.
        field: &'static str,
    },
    /// A text attribute is empty or too long.
    #[error("{field} has {len} bytes, must be {min}..={max}")]
    AttrLength {
        /// Which attribute.
        field: &'static str,
        /// Its length.
        len: usize,
        /// Least length.
        min: usize,
        /// Most length.
        max: u32,
    },
    /// A GPU provider must declare 1..=max GPUs.
    #[error("gpu_count {got} must be 1..={max} for a GPU provider")]
    GpuCount {
        /// Declared.
        got: u32,
        /// `max_gpu_count`.
        max: u32,
    },
    /// A CPU provider declared GPU hardware.
    #[error("a CPU provider must declare no GPUs, VRAM, compute capability or CUDA version")]
    CpuWithGpuAttrs,
    /// A GPU provider declared no memory.
    #[error("vram_mib must be positive for a GPU provider")]
    ZeroVram,
    /// Compute capability outside 1.0..=99.9.
    #[error("compute_capability {0} must be 10..=999 (major*10+minor) for a GPU provider")]
    ComputeCapability(u32),
    /// CUDA version not in NVML form.
    #[error("cuda_version {0} must be 0 or 1000..=99990 (major*1000+minor*10)")]
    CudaVersion(u32),
    /// The endpoint is not an http(s) URL with a host.
    #[error("endpoint_url must start with http:// or https:// and name a host")]
    BadEndpointUrl,
    /// The signer already registered a provider.
    #[error("{0} is already a provider")]
    ProviderExists(Address),
    /// The signer has no provider registration.
    #[error("{0} is not a provider")]
    NotAProvider(Address),
    /// Registration bond below `min_provider_stake`.
    #[error("provider bond {bond} ugpu is below min_provider_stake {min} ugpu")]
    BelowMinProviderStake {
        /// Offered bond.
        bond: Amount,
        /// `min_provider_stake`.
        min: Amount,
    },
    /// Deregistering while leases are open.
    #[error("provider {provider} has {open_leases} open leases")]
    ProviderHasOpenLeases {
        /// The provider.
        provider: Address,
        /// Its open leases.
        open_leases: u64,
    },
    /// A provider with open leases may not unbond: its whole bond answers for them.
    #[error(
        "{open_leases} leases are open: the whole bond stays at stake until they are paid or \
         settled (stop bidding, let them finish, then unbond)"
    )]
    UnbondWithOpenLeases {
        /// Open leases.
        open_leases: u64,
    },
    /// Closing a lease of a provider that has none open.
    #[error("provider {0} has no open leases")]
    NoOpenLeases(Address),
    /// A jailed provider may not deregister (it would shed its jail by registering again).
    #[error("provider {provider} is jailed until height {until}")]
    ProviderJailed {
        /// The provider.
        provider: Address,
        /// First height it is free.
        until: u64,
    },
    /// A sum does not fit in 128 (or 64) bits.
    #[error("arithmetic overflow")]
    Overflow,
    /// Parameters the module cannot run with.
    #[error("invalid staking parameters: {0}")]
    InvalidParams(String),
    /// A bank operation failed where staking's own checks said it could not: a broken
    /// invariant (e.g. a pool holding less than the bonds it backs).
    #[error("bank: {0}")]
    Bank(#[from] BankError),
}

impl ModuleError for StakingError {
    fn codespace(&self) -> &'static str {
        "staking"
    }

    fn code(&self) -> u32 {
        match self {
            StakingError::ZeroAmount => 1,
            StakingError::InsufficientFunds { .. } => 2,
            StakingError::InvalidConsensusKey => 3,
            StakingError::ValidatorExists(_) => 4,
            StakingError::ConsensusKeyInUse(_) => 5,
            StakingError::BelowMinSelfBond { .. } => 6,
            StakingError::NotAValidator(_) => 7,
            StakingError::InsufficientBond { .. } => 8,
            StakingError::ValidatorTombstoned(_) => 9,
            StakingError::MonikerLength { .. } => 10,
            StakingError::BadCharacters { .. } => 11,
            StakingError::AttrLength { .. } => 12,
            StakingError::GpuCount { .. } => 13,
            StakingError::CpuWithGpuAttrs => 14,
            StakingError::ZeroVram => 15,
            StakingError::ComputeCapability(_) => 16,
            StakingError::CudaVersion(_) => 17,
            StakingError::BadEndpointUrl => 18,
            StakingError::ProviderExists(_) => 19,
            StakingError::NotAProvider(_) => 20,
            StakingError::BelowMinProviderStake { .. } => 21,
            StakingError::ProviderHasOpenLeases { .. } => 22,
            StakingError::UnbondWithOpenLeases { .. } => 23,
            StakingError::NoOpenLeases(_) => 24,
            StakingError::Overflow => 25,
            StakingError::InvalidParams(_) => 26,
            StakingError::Bank(_) => 27,
            StakingError::ProviderJailed { .. } => 28,
        }
    }
}
