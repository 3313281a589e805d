use borsh::{BorshDeserialize, BorshSerialize};
use serde::{Deserialize, Serialize};

/// Brings the signer's jailed validator back into the candidate set once its jail time is
/// served. Tombstoned validators can never unjail.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgUnjail {}

/// Every slashing message. The borsh variant index is part of the wire format.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SlashingMsg {
    /// Variant 0.
    Unjail(MsgUnjail),
}

impl SlashingMsg {
    /// `slashing.<message>`, for logs and events.
    pub fn name(&self) -> &'static str {
        match self {
            SlashingMsg::Unjail(_) => "slashing.unjail",
        }
    }
}
