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
            .attr_text("from", e.from.to_bech32())
            .attr_text("to", e.to.to_bech32())
            .attr("amount", e.amount)
    }
}
