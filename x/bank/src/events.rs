use gpuchain_types::{Address, Amount, Event};

/// Funds moved between two accounts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferEvent {
    /// Payer.
    pub from: Address,
    /// Payee.
    pub to: Address,
    /// ugpu moved.
    pub amount: Amount,
}

impl From<TransferEvent> for Event {
    fn from(e: TransferEvent) -> Self {
        Event::new("bank.transfer")
            .attr("from", e.from)
            .attr("to", e.to)
            .attr("amount", e.amount)
    }
}
