use gpuchain_types::{Address, Event};

use crate::{AppliedUpgrade, Plan};

/// A validator signalled (or withdrew, with no plan) an upgrade.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeSignalEvent {
    /// The validator's operator.
    pub operator: Address,
    /// What it signalled; `None` for a withdrawal.
    pub plan: Option<Plan>,
    /// Active voting power now behind this plan (0 for a withdrawal).
    pub power: u64,
    /// Total active voting power.
    pub total_power: u64,
}

impl From<UpgradeSignalEvent> for Event {
    fn from(e: UpgradeSignalEvent) -> Self {
        let mut event = Event::new("upgrade.signal")
            .attr("operator", e.operator)
            .attr("power", e.power)
            .attr("total_power", e.total_power);
        if let Some(plan) = e.plan {
            event = event
                .attr_text("name", plan.name)
                .attr("height", plan.height);
        }
        event
    }
}

/// More than two thirds of the active power signalled one plan: it is scheduled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeScheduledEvent {
    /// The plan.
    pub plan: Plan,
}

impl From<UpgradeScheduledEvent> for Event {
    fn from(e: UpgradeScheduledEvent) -> Self {
        Event::new("upgrade.scheduled")
            .attr_text("name", e.plan.name)
            .attr("height", e.plan.height)
    }
}

/// A plan's migration ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeAppliedEvent {
    /// What ran, and where.
    pub applied: AppliedUpgrade,
}

impl From<UpgradeAppliedEvent> for Event {
    fn from(e: UpgradeAppliedEvent) -> Self {
        Event::new("upgrade.applied")
            .attr_text("name", e.applied.name)
            .attr("height", e.applied.height)
    }
}
