use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_bank::BankMsg;
use serde::{Deserialize, Serialize};

/// Every message a transaction can carry, by module. The borsh variant index is part of the
/// wire format: append new modules, never reorder.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(tag = "module", content = "msg", rename_all = "snake_case")]
pub enum Msg {
    /// Variant 0: x/bank.
    Bank(BankMsg),
}

impl Msg {
    /// `<module>.<message>`, for logs and events.
    pub fn name(&self) -> &'static str {
        match self {
            Msg::Bank(BankMsg::Send(_)) => "bank.send",
            Msg::Bank(BankMsg::MultiSend(_)) => "bank.multi_send",
        }
    }
}
