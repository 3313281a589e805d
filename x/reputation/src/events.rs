use gpuchain_types::{Address, Event};

use crate::HistoryEntry;

/// A provider's score changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReputationChangedEvent {
    /// The provider.
    pub provider: Address,
    /// The stored history entry.
    pub entry: HistoryEntry,
}

impl From<ReputationChangedEvent> for Event {
    fn from(e: ReputationChangedEvent) -> Self {
        Event::new("reputation.changed")
            .attr("provider", e.provider)
            .attr("outcome", e.entry.outcome.name())
            .attr("before_ppm", e.entry.before_ppm)
            .attr("after_ppm", e.entry.after_ppm)
            .attr("seq", e.entry.seq)
    }
}
