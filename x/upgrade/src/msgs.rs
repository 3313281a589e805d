use borsh::{BorshDeserialize, BorshSerialize};
use serde::{Deserialize, Serialize};

/// The signer, operator of an active validator, votes to run upgrade `name` at `height`.
/// A later signal replaces the signer's earlier one.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgSignalUpgrade {
    /// Name the new release registers its migration under.
    pub name: String,
    /// Height of the first block the new release executes.
    pub height: u64,
}

/// Takes back the signer's signal.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgWithdrawSignal {}

/// Every upgrade message. The borsh variant index is part of the wire format.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum UpgradeMsg {
    /// Variant 0.
    Signal(MsgSignalUpgrade),
    /// Variant 1.
    Withdraw(MsgWithdrawSignal),
}

impl UpgradeMsg {
    /// `upgrade.<message>`, for logs and events.
    pub fn name(&self) -> &'static str {
        match self {
            UpgradeMsg::Signal(_) => "upgrade.signal",
            UpgradeMsg::Withdraw(_) => "upgrade.withdraw",
        }
    }
}
