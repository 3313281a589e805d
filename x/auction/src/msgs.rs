use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_jobspec::JobSpec;
use gpuchain_types::Amount;
use serde::{Deserialize, Serialize};

use crate::{Requirements, TooFewBids};

/// Posts an order; locks `replicas × max_price_per_replica` plus the verification fee.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgPostOrder {
    /// The job.
    pub job: JobSpec,
    /// Hardware needed.
    pub requirements: Requirements,
    /// k, 1..=5.
    pub replicas: u32,
    /// Highest price per replica, ugpu.
    pub max_price_per_replica: Amount,
    /// Bids are taken for this many blocks after the posting block.
    pub bid_window_blocks: u64,
    /// Blocks from clearing to the commit deadline.
    pub exec_deadline_blocks: u64,
    /// Too-few-bids policy.
    pub on_too_few_bids: TooFewBids,
}

/// Cancels the signer's order before it clears; refunds everything.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgCancelOrder {
    /// Order.
    pub order_id: u64,
}

/// Bids `price` per replica on an order.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgBid {
    /// Order.
    pub order_id: u64,
    /// Asked price per replica, ugpu.
    pub price: Amount,
}

/// Commits blake3(result_hash ‖ provider address bytes ‖ salt) for a lease.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgCommitResult {
    /// Lease.
    pub lease_id: u64,
    /// See [`crate::commitment`].
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub commitment: [u8; 32],
}

/// Reveals a committed result.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgRevealResult {
    /// Lease.
    pub lease_id: u64,
    /// blake3 of the result blob (or the training transcript root).
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub result_hash: [u8; 32],
    /// The salt used in the commitment.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub salt: [u8; 32],
}

/// Hands a lease back before its commit deadline: the provider cannot honour it. The client
/// is refunded the replica at once and the provider is slashed the (smaller) abandoned-lease
/// share instead of waiting out the deadline for the missed-deadline slash.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgReleaseLease {
    /// Lease.
    pub lease_id: u64,
}

/// The provider of a `Comparing` lease says whether every other revealed replica of the
/// order matches its own output within the job's tolerance (fetched from each provider's
/// blob server by the revealed hash). One statement per lease.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgCompareReplicas {
    /// The signer's lease.
    pub lease_id: u64,
    /// `true`: all the other outputs are within tolerance of the signer's; `false`: at
    /// least one is not, or could not be fetched.
    pub consistent: bool,
}

/// The client of a revealed lease says it fetched the output (bytes whose blake3 is the
/// revealed hash). A lease is paid only once someone other than its provider fetched its
/// output: this receipt, a verifier's verdict, or the other replicas' comparison; without
/// any, a verifier checks that the output can be fetched before it is paid.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgConfirmReceipt {
    /// The lease whose output the signer fetched.
    pub lease_id: u64,
}

/// Withdraws the signer's accrued validator rewards.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgWithdrawRewards {}

/// Every auction message. The borsh variant index is part of the wire format.
// A message is decoded once per transaction and moved, never stored in bulk: no box needed.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AuctionMsg {
    /// Variant 0.
    PostOrder(MsgPostOrder),
    /// Variant 1.
    CancelOrder(MsgCancelOrder),
    /// Variant 2.
    Bid(MsgBid),
    /// Variant 3.
    CommitResult(MsgCommitResult),
    /// Variant 4.
    RevealResult(MsgRevealResult),
    /// Variant 5.
    WithdrawRewards(MsgWithdrawRewards),
    /// Variant 6.
    ReleaseLease(MsgReleaseLease),
    /// Variant 7.
    CompareReplicas(MsgCompareReplicas),
    /// Variant 8.
    ConfirmReceipt(MsgConfirmReceipt),
}

impl AuctionMsg {
    /// `auction.<message>`, for logs and events.
    pub fn name(&self) -> &'static str {
        match self {
            AuctionMsg::PostOrder(_) => "auction.post_order",
            AuctionMsg::CancelOrder(_) => "auction.cancel_order",
            AuctionMsg::Bid(_) => "auction.bid",
            AuctionMsg::CommitResult(_) => "auction.commit_result",
            AuctionMsg::RevealResult(_) => "auction.reveal_result",
            AuctionMsg::WithdrawRewards(_) => "auction.withdraw_rewards",
            AuctionMsg::ReleaseLease(_) => "auction.release_lease",
            AuctionMsg::CompareReplicas(_) => "auction.compare_replicas",
            AuctionMsg::ConfirmReceipt(_) => "auction.confirm_receipt",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borsh_variant_index_is_the_wire_format() {
        let bytes = borsh::to_vec(&AuctionMsg::WithdrawRewards(MsgWithdrawRewards {}));
        assert_eq!(bytes.ok(), Some(vec![5]));
        let bytes = borsh::to_vec(&AuctionMsg::Bid(MsgBid {
            order_id: 1,
            price: 2,
        }));
        assert_eq!(bytes.ok().and_then(|b| b.first().copied()), Some(2));
    }
}
