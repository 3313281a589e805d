use gpuchain_types::{Address, Amount, Event};

use crate::{UnbondingEntry, UnbondingKind};

fn kind_name(kind: UnbondingKind) -> &'static str {
    match kind {
        UnbondingKind::Validator => "validator",
        UnbondingKind::Provider => "provider",
    }
}

/// A validator was created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatorCreatedEvent {
    /// Operator.
    pub operator: Address,
    /// Hex consensus address.
    pub consensus_address: String,
    /// Self-bond.
    pub bonded: Amount,
}

impl From<ValidatorCreatedEvent> for Event {
    fn from(e: ValidatorCreatedEvent) -> Self {
        Event::new("staking.validator_created")
            .attr("operator", e.operator)
            .attr("consensus_address", e.consensus_address)
            .attr("bonded", e.bonded)
    }
}

/// A validator bonded more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatorBondedEvent {
    /// Operator.
    pub operator: Address,
    /// Added.
    pub amount: Amount,
    /// Bond after.
    pub bonded: Amount,
}

impl From<ValidatorBondedEvent> for Event {
    fn from(e: ValidatorBondedEvent) -> Self {
        Event::new("staking.validator_bonded")
            .attr("operator", e.operator)
            .attr("amount", e.amount)
            .attr("bonded", e.bonded)
    }
}

/// A validator's moniker changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatorEditedEvent {
    /// Operator.
    pub operator: Address,
    /// New moniker.
    pub moniker: String,
}

impl From<ValidatorEditedEvent> for Event {
    fn from(e: ValidatorEditedEvent) -> Self {
        Event::new("staking.validator_edited")
            .attr("operator", e.operator)
            .attr("moniker", e.moniker)
    }
}

/// A validator's power in CometBFT's set changed (0 = removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatorSetChangedEvent {
    /// Hex consensus address.
    pub consensus_address: String,
    /// New power.
    pub power: u64,
}

impl From<ValidatorSetChangedEvent> for Event {
    fn from(e: ValidatorSetChangedEvent) -> Self {
        Event::new("staking.validator_set_changed")
            .attr("consensus_address", e.consensus_address)
            .attr("power", e.power)
    }
}

/// A provider registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderRegisteredEvent {
    /// Operator.
    pub operator: Address,
    /// Bond.
    pub bonded: Amount,
    /// Declared GPU model.
    pub gpu_model: String,
    /// Declared region.
    pub region: String,
}

impl From<ProviderRegisteredEvent> for Event {
    fn from(e: ProviderRegisteredEvent) -> Self {
        Event::new("staking.provider_registered")
            .attr("operator", e.operator)
            .attr("bonded", e.bonded)
            .attr("gpu_model", e.gpu_model)
            .attr("region", e.region)
    }
}

/// A provider changed its attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderUpdatedEvent {
    /// Operator.
    pub operator: Address,
}

impl From<ProviderUpdatedEvent> for Event {
    fn from(e: ProviderUpdatedEvent) -> Self {
        Event::new("staking.provider_updated").attr("operator", e.operator)
    }
}

/// A provider bonded more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderBondedEvent {
    /// Operator.
    pub operator: Address,
    /// Added.
    pub amount: Amount,
    /// Bond after.
    pub bonded: Amount,
}

impl From<ProviderBondedEvent> for Event {
    fn from(e: ProviderBondedEvent) -> Self {
        Event::new("staking.provider_bonded")
            .attr("operator", e.operator)
            .attr("amount", e.amount)
            .attr("bonded", e.bonded)
    }
}

/// A provider deregistered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderDeregisteredEvent {
    /// Operator.
    pub operator: Address,
    /// Bond sent to the unbonding queue.
    pub unbonding: Amount,
}

impl From<ProviderDeregisteredEvent> for Event {
    fn from(e: ProviderDeregisteredEvent) -> Self {
        Event::new("staking.provider_deregistered")
            .attr("operator", e.operator)
            .attr("unbonding", e.unbonding)
    }
}

/// Stake entered the unbonding queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnbondingStartedEvent {
    /// The queued entry.
    pub entry: UnbondingEntry,
}

impl From<&UnbondingEntry> for UnbondingStartedEvent {
    fn from(entry: &UnbondingEntry) -> Self {
        UnbondingStartedEvent {
            entry: entry.clone(),
        }
    }
}

impl From<UnbondingStartedEvent> for Event {
    fn from(e: UnbondingStartedEvent) -> Self {
        Event::new("staking.unbonding_started")
            .attr("id", e.entry.id)
            .attr("owner", e.entry.owner)
            .attr("kind", kind_name(e.entry.kind))
            .attr("amount", e.entry.amount)
            .attr("completion_height", e.entry.completion_height)
    }
}

/// Unbonded stake was paid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnbondingCompletedEvent {
    /// The released entry.
    pub entry: UnbondingEntry,
}

impl From<&UnbondingEntry> for UnbondingCompletedEvent {
    fn from(entry: &UnbondingEntry) -> Self {
        UnbondingCompletedEvent {
            entry: entry.clone(),
        }
    }
}

impl From<UnbondingCompletedEvent> for Event {
    fn from(e: UnbondingCompletedEvent) -> Self {
        Event::new("staking.unbonding_completed")
            .attr("id", e.entry.id)
            .attr("owner", e.entry.owner)
            .attr("kind", kind_name(e.entry.kind))
            .attr("amount", e.entry.amount)
    }
}
