use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_auction::AuctionMsg;
use gpuchain_bank::BankMsg;
use gpuchain_serving::ServingMsg;
use gpuchain_slashing::SlashingMsg;
use gpuchain_staking::StakingMsg;
use gpuchain_upgrade::UpgradeMsg;
use gpuchain_verify::VerifyMsg;
use serde::{Deserialize, Serialize};

/// Every message a transaction can carry, by module. The borsh variant index is part of the
/// wire format: append new modules, never reorder.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(tag = "module", content = "msg", rename_all = "snake_case")]
// A transaction holds a handful of messages, decoded once and never copied in bulk; boxing
// the large variants would cost an allocation per message for no measurable saving.
#[allow(clippy::large_enum_variant)]
pub enum Msg {
    /// Variant 0: x/bank.
    Bank(BankMsg),
    /// Variant 1: x/staking (validators and providers).
    Staking(StakingMsg),
    /// Variant 2: x/slashing.
    Slashing(SlashingMsg),
    /// Variant 3: x/auction (orders, bids, commit-reveal, rewards).
    Auction(AuctionMsg),
    /// Variant 4: x/verify (verifiers, verdicts, appeals, challenges).
    Verify(VerifyMsg),
    /// Variant 5: x/upgrade (validator-signalled upgrade heights).
    Upgrade(UpgradeMsg),
    /// Variant 6: x/serving (inference leases, receipt claims and audits).
    Serving(ServingMsg),
}

impl Msg {
    /// `<module>.<message>`, for logs and events.
    pub fn name(&self) -> &'static str {
        match self {
            Msg::Bank(BankMsg::Send(_)) => "bank.send",
            Msg::Bank(BankMsg::MultiSend(_)) => "bank.multi_send",
            Msg::Staking(m) => m.name(),
            Msg::Slashing(m) => m.name(),
            Msg::Auction(m) => m.name(),
            Msg::Verify(m) => m.name(),
            Msg::Upgrade(m) => m.name(),
            Msg::Serving(m) => m.name(),
        }
    }
}
