//! x/auction: the verified compute market in one crate, because orders, leases, escrow and
//! result verification share one state machine and splitting them would only add cycles.
//! A client posts an order (a job spec, hardware [`Requirements`], `replicas` k, a per-replica
//! max price and windows in blocks); the order's value plus the verification fee is locked in
//! the `escrow` module account ([`escrow`]). Eligible providers bid; in the end-block of the
//! window's last height the chain clears the reverse auction ([`clearing`]): rank by
//! reputation-adjusted price, blake3 tie-break, best k win, all at one clearing price, and
//! the excess is refunded. Winners commit blake3(result ‖ provider ‖ salt), then reveal; equal
//! results from k ≥ 2 replicas are accepted, different ones disputed, a lone result is audited
//! with a reputation-dependent probability ([`verify`]). Accepted results are paid after the
//! challenge window, minus the take rate, which goes to the fee pool; missed deadlines are
//! slashed and refunded. Each block the fee pool is split between validators (withdrawable
//! rewards), the community pool and the verification pool ([`distribution`]).
//! Invariant (checked by the tests): the escrow account holds exactly the sum of the orders'
//! `escrowed` amounts, and the rewards pool the sum of accrued validator rewards.

// Consensus code never panics: bad input is an error code that changes nothing.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::todo,
        clippy::unimplemented,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )
)]

pub mod audit;
pub mod clearing;
pub mod distribution;
mod end_block;
mod error;
pub mod escrow;
mod events;
mod genesis;
pub mod handler;
pub mod judge;
mod msgs;
mod params;
pub mod retire;
pub mod settlement;
#[cfg(test)]
mod simulation_tests;
pub mod state_key;
/// An in-memory chain for tests and benchmarks (feature `test-utils`).
#[cfg(any(test, feature = "test-utils"))]
#[doc(hidden)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub mod test_utils;
mod view;

pub use end_block::end_block;
pub use error::AuctionError;
pub use events::*;
pub use genesis::AuctionGenesis;
pub use judge::{apply_verdict, commitment, hold_lease, Verdict};
pub use msgs::{
    AuctionMsg, MsgBid, MsgCancelOrder, MsgCommitResult, MsgCompareReplicas, MsgConfirmReceipt,
    MsgPostOrder, MsgReleaseLease, MsgRevealResult, MsgWithdrawRewards,
};
pub use params::{AuctionParams, MAX_REPLICAS};
pub use view::{AuctionRead, AuctionWrite};

use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_jobspec::JobSpec;
use gpuchain_staking::{ProviderAttrs, ProviderClass};
use gpuchain_types::{Address, Amount};
use serde::{Deserialize, Serialize};

/// Module accounts of x/auction. No key controls them; only module code moves their funds.
pub mod module_account {
    use gpuchain_types::Address;

    /// Holds every order's locked funds until they are paid or refunded.
    pub fn escrow() -> Address {
        Address::module("escrow")
    }

    /// Holds validators' accrued, not yet withdrawn rewards.
    pub fn rewards_pool() -> Address {
        Address::module("rewards_pool")
    }

    /// The community pool's share of the fee pool.
    pub fn community_pool() -> Address {
        Address::module("community_pool")
    }

    /// Funds audits and challenges: verification fees and its share of the fee pool.
    pub fn verification_pool() -> Address {
        Address::module("verification_pool")
    }
}

/// Which machine class an order needs.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ClassRequirement {
    /// Variant 0: any provider.
    Any,
    /// Variant 1: GPU providers only.
    Gpu,
    /// Variant 2: CPU providers only.
    Cpu,
}

/// Hardware an order needs; a provider's declared [`ProviderAttrs`] must meet every field.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct Requirements {
    /// Machine class.
    pub class: ClassRequirement,
    /// Exact GPU model (case-insensitive), or any.
    #[serde(default)]
    pub gpu_model: Option<String>,
    /// Least memory per GPU in MiB.
    #[serde(default)]
    pub min_vram_mib: u64,
    /// Least number of GPUs.
    #[serde(default)]
    pub min_gpu_count: u32,
    /// Least CUDA version, NVML-style (`12040` = 12.4).
    #[serde(default)]
    pub min_cuda_version: u32,
    /// Exact region, or any.
    #[serde(default)]
    pub region: Option<String>,
}

impl Requirements {
    /// Whether declared hardware meets the requirements.
    pub fn matches(&self, a: &ProviderAttrs) -> bool {
        let class_ok = match self.class {
            ClassRequirement::Any => true,
            ClassRequirement::Gpu => a.class == ProviderClass::Gpu,
            ClassRequirement::Cpu => a.class == ProviderClass::Cpu,
        };
        class_ok
            && self
                .gpu_model
                .as_ref()
                .is_none_or(|m| m.eq_ignore_ascii_case(&a.gpu_model))
            && a.vram_mib >= self.min_vram_mib
            && a.gpu_count >= self.min_gpu_count
            && a.cuda_version >= self.min_cuda_version
            && self.region.as_ref().is_none_or(|r| r == &a.region)
    }
}

/// What happens when fewer than k eligible bids arrive.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum TooFewBids {
    /// Variant 0: refund the client and close the order.
    Refund,
    /// Variant 1: run the bid window once more (bids kept), then refund.
    ReopenOnce,
}

/// Where an order is in its life.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum OrderState {
    /// Variant 0: taking bids until `bid_end_height`.
    Open,
    /// Variant 1: cleared; leases are running.
    Cleared,
    /// Variant 2: every lease reached a final state; nothing is left in escrow.
    Settled,
    /// Variant 3: cancelled by the client before clearing; refunded.
    Cancelled,
    /// Variant 4: too few bids; refunded.
    Expired,
}

impl OrderState {
    /// Whether nothing more will happen to the order (settled, cancelled or expired): it
    /// holds no funds and waits for nothing.
    pub fn is_closed(&self) -> bool {
        matches!(
            self,
            OrderState::Settled | OrderState::Cancelled | OrderState::Expired
        )
    }
}

/// A client's order.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct Order {
    /// Unique, increasing id.
    pub id: u64,
    /// Who posted and pays.
    pub client: Address,
    /// The job.
    pub job: JobSpec,
    /// Hardware needed.
    pub requirements: Requirements,
    /// Providers that run the job independently (k).
    pub replicas: u32,
    /// Highest price per replica the client pays, ugpu.
    pub max_price_per_replica: Amount,
    /// Blocks a lease has from clearing to commit its result.
    pub exec_deadline_blocks: u64,
    /// Too-few-bids policy.
    pub on_too_few_bids: TooFewBids,
    /// Posted at.
    pub created_height: u64,
    /// Bids are taken up to and including this height; clearing runs in its end-block.
    pub bid_end_height: u64,
    /// Whether the window was already re-opened once.
    pub reopened: bool,
    /// Verification fee locked at posting, paid to the verification pool at clearing.
    pub verification_fee: Amount,
    /// Per-replica price set by clearing.
    pub clearing_price: Option<Amount>,
    /// What this order holds in escrow now (its open obligation).
    pub escrowed: Amount,
    /// State.
    pub state: OrderState,
    /// Part of `escrowed` held for a dispute (orders of k ≥ 2: one audit fee per replica at
    /// the clearing price): spent on the verifiers when the replicas disagree, refunded at
    /// settlement otherwise.
    pub dispute_reserve: Amount,
}

/// One provider's bid on an order.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct Bid {
    /// Order.
    pub order_id: u64,
    /// Bidder.
    pub provider: Address,
    /// Asked price per replica, ugpu.
    pub price: Amount,
    /// Placed at.
    pub height: u64,
}

/// Where a lease is. Terminal states: `Paid`, `Faulted`, `Missed`, `Refunded`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum LeaseState {
    /// Variant 0: leased; no commitment yet.
    Open,
    /// Variant 1: result committed.
    Committed,
    /// Variant 2: result revealed; waiting for the other replicas.
    Revealed,
    /// Variant 3: accepted; paid at `payout_height` unless challenged.
    Accepted,
    /// Variant 4: a lone result sampled for audit; waits for a verifier verdict.
    AuditPending,
    /// Variant 5: replicas disagree; waits for a verifier verdict.
    Disputed,
    /// Variant 6: paid to the provider (final).
    Paid,
    /// Variant 7: proven wrong; slashed, client refunded (final).
    Faulted,
    /// Variant 8: no commit or reveal in time; slashed, client refunded (final).
    Missed,
    /// Variant 9: no verdict came in time; client refunded, nobody slashed (final).
    Refunded,
    /// Variant 10: handed back by its provider before the deadline; client refunded,
    /// provider slashed the abandoned-lease share (final).
    Released,
    /// Variant 11: agrees with a replica of its order that was sampled for audit; takes
    /// that replica's verdict (one re-run settles every equal result).
    AuditFollowing,
    /// Variant 12: revealed, and its order's replicas revealed different bytes; waits for
    /// each replica's provider to say whether the other outputs match its own within the
    /// job's tolerance (`CompareReplicas`). All say yes: the results are judged as agreeing;
    /// any says no, or is silent past `verdict_deadline_height`: the order is disputed.
    Comparing,
    /// Variant 13: accepted and due, but nobody other than its provider is known to have
    /// fetched its output; a verifier checks that the output can be fetched (an `honest`
    /// verdict pays it, a `faulty` one faults it like a wrong result).
    AvailabilityPending,
}

impl LeaseState {
    /// Whether the lease is over.
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            LeaseState::Paid
                | LeaseState::Faulted
                | LeaseState::Missed
                | LeaseState::Refunded
                | LeaseState::Released
        )
    }

    /// Whether the lease waits for a verifier's verdict of its own.
    pub fn is_verdict_pending(&self) -> bool {
        matches!(
            self,
            LeaseState::AuditPending | LeaseState::Disputed | LeaseState::AvailabilityPending
        )
    }

    /// Whether a verdict can still settle it: waiting for one (its own or an agreeing
    /// replica's), or accepted and not yet paid.
    pub fn takes_verdict(&self) -> bool {
        self.is_verdict_pending()
            || matches!(self, LeaseState::Accepted | LeaseState::AuditFollowing)
    }

    /// Whether its order's results are not judged yet (a ringer cannot be revealed on it).
    pub fn is_unjudged(&self) -> bool {
        matches!(
            self,
            LeaseState::Open | LeaseState::Committed | LeaseState::Revealed | LeaseState::Comparing
        )
    }

    /// A short name for events and queries.
    pub fn name(&self) -> &'static str {
        match self {
            LeaseState::Open => "open",
            LeaseState::Committed => "committed",
            LeaseState::Revealed => "revealed",
            LeaseState::Accepted => "accepted",
            LeaseState::AuditPending => "audit_pending",
            LeaseState::AuditFollowing => "audit_following",
            LeaseState::Disputed => "disputed",
            LeaseState::Paid => "paid",
            LeaseState::Faulted => "faulted",
            LeaseState::Missed => "missed",
            LeaseState::Refunded => "refunded",
            LeaseState::Released => "released",
            LeaseState::Comparing => "comparing",
            LeaseState::AvailabilityPending => "availability_pending",
        }
    }
}

/// A won replica of an order.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct Lease {
    /// Unique, increasing id.
    pub id: u64,
    /// Order.
    pub order_id: u64,
    /// Winner.
    pub provider: Address,
    /// Client of the order.
    pub client: Address,
    /// Clearing price, ugpu.
    pub price: Amount,
    /// Created at.
    pub created_height: u64,
    /// Last height a commitment is accepted.
    pub deadline_height: u64,
    /// Last height a reveal is accepted.
    pub reveal_end_height: u64,
    /// blake3(result_hash ‖ provider ‖ salt), once committed.
    pub commitment: Option<[u8; 32]>,
    /// Revealed result hash.
    pub result_hash: Option<[u8; 32]>,
    /// When accepted: the height its payment is released.
    pub payout_height: Option<u64>,
    /// When waiting for a verdict: the last height one is taken; when comparing: the last
    /// height a comparison is taken.
    pub verdict_deadline_height: Option<u64>,
    /// State.
    pub state: LeaseState,
    /// What the lease pays the verification pool out of its price when it is paid, ugpu:
    /// set when its result is judged (its share of the audit fee times the chance it is
    /// audited; for a disputed lease, what the order's dispute reserve did not cover).
    pub verification_charge: Amount,
    /// Whether someone other than the provider is known to have fetched the revealed
    /// output: the client confirmed receipt, a verifier judged it (re-execution or
    /// availability check), or every other replica's provider compared it with its own.
    /// An unfetched lease is not paid before a verifier has fetched it.
    pub fetched: bool,
}
