use gpuchain_types::{Address, Event};

use crate::SlashRecord;

/// Stake was slashed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlashEvent {
    /// The stored record.
    pub record: SlashRecord,
}

impl From<SlashEvent> for Event {
    fn from(e: SlashEvent) -> Self {
        let r = e.record;
        let mut event = Event::new("slashing.slash")
            .attr("id", r.id)
            .attr("subject", r.subject)
            .attr("reason", r.reason.name())
            .attr("slashed", r.outcome.slashed)
            .attr("to_costs", r.outcome.to_costs)
            .attr("to_client", r.outcome.to_client)
            .attr("to_prover", r.outcome.to_prover)
            .attr("burned", r.outcome.burned);
        if let Some(client) = r.client {
            event = event.attr("client", client);
        }
        if let Some(prover) = r.prover {
            event = event.attr("prover", prover);
        }
        event
    }
}

/// A validator or provider was jailed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JailEvent {
    /// Operator.
    pub subject: Address,
    /// `"validator"` or `"provider"`.
    pub role: &'static str,
    /// First height it is free (or may unjail).
    pub until: u64,
}

impl From<JailEvent> for Event {
    fn from(e: JailEvent) -> Self {
        Event::new("slashing.jail")
            .attr("subject", e.subject)
            .attr("role", e.role)
            .attr("until", e.until)
    }
}

/// A validator was tombstoned for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TombstoneEvent {
    /// Operator.
    pub operator: Address,
    /// Hex consensus address.
    pub consensus_address: String,
}

impl From<TombstoneEvent> for Event {
    fn from(e: TombstoneEvent) -> Self {
        Event::new("slashing.tombstone")
            .attr("operator", e.operator)
            .attr("consensus_address", e.consensus_address)
    }
}

/// A validator unjailed itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnjailEvent {
    /// Operator.
    pub operator: Address,
}

impl From<UnjailEvent> for Event {
    fn from(e: UnjailEvent) -> Self {
        Event::new("slashing.unjail").attr("operator", e.operator)
    }
}
