use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_types::{Address, Amount};
use serde::{Deserialize, Serialize};

/// Moves `amount` ugpu from the signer to `to`.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgSend {
    /// Recipient.
    pub to: Address,
    /// ugpu to move.
    pub amount: Amount,
}

/// One recipient of a multi-send.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct Output {
    /// Recipient.
    pub to: Address,
    /// ugpu for it.
    pub amount: Amount,
}

/// Pays several recipients from the signer at once, all or nothing.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgMultiSend {
    /// Recipients.
    pub outputs: Vec<Output>,
}

/// Every bank message. The borsh variant index is part of the wire format.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BankMsg {
    /// Variant 0.
    Send(MsgSend),
    /// Variant 1.
    MultiSend(MsgMultiSend),
}
