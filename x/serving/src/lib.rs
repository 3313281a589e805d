//! x/serving: inference leases. A client opens a serving order for a model on `n` providers
//! for a number of blocks, with a ceiling price per unit (a million tokens for generation, a
//! thousand inputs for embeddings) and a deposit in escrow; providers bid; the chain clears
//! the `n` lowest bids at one uniform price (the highest accepted bid) and opens a lease for
//! each winner. Payment follows the requests actually answered: the provider keeps a
//! [`receipt::Receipt`] per request, the client's gateway signs a [`receipt::BatchAck`] over
//! each batch of them (count, units, Merkle root), and the provider claims the batch with that
//! signature. The chain pays from the deposit; what is left goes back when the order closes.
//!
//! # Rules (the argument for each is in docs/protocol.md, "Serving")
//!
//! - **Claims** continue the lease's request numbers exactly (`first_seq` = the lease's next,
//!   the range closed for good after it; a receipt the client never got is left out of its
//!   batch), carry the client's signature over the chain id, lease, range, units and root,
//!   and fit the deposit with the claim's audit reserve. A claim is at most half of what an
//!   audit threatens the provider's bond with (`audit_ppm × wrong-result slash of the bond /
//!   2`): cheating on a claim loses more in expectation than the claim is worth.
//! - **Audits.** In the end-block of the claim's block the chain draws, from that block's
//!   hash, whether the claim is audited and which of its receipts. The provider or the client
//!   reveals that receipt, its Merkle proof and the request and response bodies; nobody
//!   revealing by the deadline slashes the provider for a wrong result and refunds the whole
//!   claim. A verifier drawn by bond (never the client, the provider or an account tied to them
//!   by funding) re-checks the answer and posts `honest` or `faulty`. `faulty` needs a second
//!   drawn verifier to agree; `honest` gets a second verifier with chance
//!   `second_opinion_ppm`; two disagreeing verdicts go to a third. The majority stands:
//!   `faulty` slashes the provider (wrong result), refunds the whole claim and its audit
//!   reserve to the client and pays the audit fee out of the slash; `honest` pays the claim and
//!   the fee from the client's reserve. Verifiers on the losing side and verifiers who miss
//!   their deadline are slashed through x/verify. Unaudited claims are paid in the end-block
//!   of their block.
//! - **Appeals.** A verdict applies `appeal_window_blocks` after it stands. Until then the
//!   party it goes against (the client of `honest`, the provider of `faulty`) may appeal,
//!   locking `appeal_deposit`: a fresh jury, none of the first, judges the receipt again and
//!   decides by two agreeing verdicts. Its verdict is final and applies over both juries:
//!   whoever voted against it is slashed. Upheld, the deposit pays the appeal jury;
//!   overturned (or with no appeal jury to be had), it goes back. A jury of colluding
//!   verifiers can therefore not make a wrong verdict stick while the wronged party watches.
//! - **Liveness.** The client may report a serving lease; its provider must answer with a
//!   heartbeat transaction within `report_window_blocks`, or it loses the lease (its end moves
//!   to now) and the abandoned-lease share of its bond. A live provider loses nothing to a
//!   report.
//! - **Ending.** The client may end an order early; leases stop at that block, claims for
//!   acknowledged batches are taken for `claim_grace_blocks` more, then the rest of the
//!   deposit is refunded. Retention: a closed order and its leases are deleted
//!   `retention_secs` of block time after closing, once no claim of theirs is open.
//!
//! Invariant: the `serving_escrow` module account holds exactly the open orders' deposits
//! plus the open claims' amounts, audit reserves and appeal deposits ([`check_invariants`]).

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

mod audit;
mod end_block;
mod error;
mod escrow;
mod events;
mod genesis;
pub mod handler;
mod msgs;
mod params;
pub mod receipt;
pub mod state_key;
mod view;

#[cfg(test)]
mod appeal_tests;
#[cfg(test)]
mod models_tests;
#[cfg(test)]
mod test_utils;
#[cfg(test)]
mod tests;

pub use end_block::end_block;
pub use error::ServingError;
pub use escrow::{claim_amount, claim_window_blocks, max_claim, CLAIMS_PER_WINDOW};
pub use events::*;
pub use genesis::{GenesisJudge, ServingGenesis};
pub use msgs::*;
pub use params::ServingParams;
pub use view::{check_invariants, ServingRead, ServingWrite};

use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_types::{Address, Amount};
use serde::{Deserialize, Serialize};

/// Module accounts of x/serving.
pub mod module_account {
    use gpuchain_types::Address;

    /// Holds every open order's deposit and every open claim.
    pub fn serving_escrow() -> Address {
        Address::module("serving_escrow")
    }
}

/// Longest model name.
pub const MAX_MODEL_NAME_BYTES: usize = 128;
/// Longest region label.
pub const MAX_REGION_BYTES: usize = 32;
/// Longest serving endpoint URL a bid may give.
pub const MAX_ENDPOINT_BYTES: usize = 256;
/// Most models a verifier declares it judges ([`MsgServingModels`]).
pub const MAX_JUDGED_MODELS: usize = 16;

/// Whether `url` can be a serving endpoint: an `http://` or `https://` URL with a host, at
/// most [`MAX_ENDPOINT_BYTES`] long, without spaces or control characters.
pub fn is_endpoint_url(url: &str) -> bool {
    let host = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    url.len() <= MAX_ENDPOINT_BYTES
        && host.is_some_and(|h| !h.is_empty() && !h.starts_with('/'))
        && !url.chars().any(|c| c.is_control() || c.is_whitespace())
}

/// What a model serves, and the unit it is priced in.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ServingKind {
    /// Variant 0: chat and text completions, priced per million tokens (prompt + generated).
    Generation,
    /// Variant 1: embeddings, priced per thousand inputs.
    Embedding,
}

impl ServingKind {
    /// Units one price covers.
    pub fn units_per_price(self) -> u128 {
        match self {
            ServingKind::Generation => 1_000_000,
            ServingKind::Embedding => 1_000,
        }
    }

    /// Its name in events and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ServingKind::Generation => "generation",
            ServingKind::Embedding => "embedding",
        }
    }
}

/// The model an order serves: its weights by hash, its kind and the name clients ask for.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct ModelRef {
    /// The name in `/v1/models` and in requests (`SmolLM2-135M-Instruct`).
    pub name: String,
    /// blake3 of the weights file.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub blake3: [u8; 32],
    /// Generation or embeddings.
    pub kind: ServingKind,
}

/// Where a serving order is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ServingOrderState {
    /// Variant 0: taking bids.
    Bidding,
    /// Variant 1: leases serve until `end_height`; claims are taken until `close_height`.
    Serving,
    /// Variant 2: over; the deposit's rest was refunded.
    Closed,
}

/// A client's request for a model served by `providers` providers.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct ServingOrder {
    /// Id.
    pub id: u64,
    /// Who pays.
    pub client: Address,
    /// What is served.
    pub model: ModelRef,
    /// How many providers.
    pub providers: u32,
    /// Ceiling price per [`ServingKind::units_per_price`] units, ugpu.
    pub max_price: Amount,
    /// Blocks the leases serve.
    pub duration_blocks: u64,
    /// Only providers of this region bid, if set.
    pub region: Option<String>,
    /// Last block bids are taken.
    pub bid_end_height: u64,
    /// Deposit not yet claimed, ugpu (held by `serving_escrow`).
    pub deposit: Amount,
    /// State.
    pub state: ServingOrderState,
    /// The uniform price every lease is paid (0 before clearing).
    pub price: Amount,
    /// Last block the leases serve (0 before clearing).
    pub end_height: u64,
    /// Block in whose end-block the order closes (0 before clearing).
    pub close_height: u64,
    /// Its leases.
    pub leases: Vec<u64>,
}

impl ServingOrder {
    /// Whether its client ended its leases before their full term: an order clears in the
    /// end-block of `bid_end_height` and then serves `duration_blocks`, so an end before
    /// that was asked for (`MsgEndServing`). A gateway renews only orders that ran their term.
    pub fn ended_early(&self) -> bool {
        !self.leases.is_empty()
            && self.end_height < self.bid_end_height.saturating_add(self.duration_blocks)
    }
}

/// A provider's bid on a serving order.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct ServingBid {
    /// Order.
    pub order_id: u64,
    /// Bidder.
    pub provider: Address,
    /// Asked price per unit block.
    pub price: Amount,
    /// Height placed.
    pub height: u64,
    /// Where the provider answers the lease's requests (OpenAI API base URL).
    pub endpoint: String,
}

/// Where a serving lease is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ServingLeaseState {
    /// Variant 0: serving (until the order's end).
    Serving,
    /// Variant 1: lost for not answering a report or for a failed audit; claims for what was
    /// served before are still taken until the order closes.
    Dropped,
    /// Variant 2: the order closed.
    Closed,
}

/// One provider's part of a serving order.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct ServingLease {
    /// Id.
    pub id: u64,
    /// Order.
    pub order_id: u64,
    /// Who serves.
    pub provider: Address,
    /// Who pays.
    pub client: Address,
    /// What it serves.
    pub model: ModelRef,
    /// The order's uniform price.
    pub price: Amount,
    /// Created at.
    pub start_height: u64,
    /// Last block it serves.
    pub end_height: u64,
    /// The next request number a claim must start at.
    pub next_seq: u64,
    /// Units claimed so far.
    pub units: u128,
    /// Paid to the provider so far, ugpu.
    pub paid: Amount,
    /// Claims not settled yet.
    pub open_claims: u32,
    /// A report's deadline, while one is open.
    pub report_deadline: Option<u64>,
    /// State.
    pub state: ServingLeaseState,
    /// Where the provider answers the lease's requests (OpenAI API base URL), as it bid.
    pub endpoint: String,
}

/// Where a claim is.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimStage {
    /// Variant 0: posted in this block; its end-block draws whether it is audited.
    Posted,
    /// Variant 1: audited: receipt `index` of the batch must be revealed by `deadline`.
    AwaitingReveal {
        /// Position in the batch.
        index: u64,
        /// Last block for the reveal.
        deadline: u64,
    },
    /// Variant 2: revealed; verifiers judge it.
    Judging(Box<Judgement>),
    /// Variant 3: the jury's verdict stands, applied at `appeal_deadline` unless the party
    /// it goes against appeals first. The jurors stay engaged (their bonds in place) until
    /// then.
    Standing {
        /// The standing verdict.
        honest: bool,
        /// Last block an appeal is taken.
        appeal_deadline: u64,
        /// The judgement it came from.
        judgement: Box<Judgement>,
    },
}

/// A revealed receipt under judgement.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct Judgement {
    /// The drawn receipt.
    pub receipt: receipt::Receipt,
    /// The request body (its blake3 is the receipt's request hash).
    pub request: Vec<u8>,
    /// The response body.
    pub response: Vec<u8>,
    /// Verdicts posted so far, in order.
    pub verdicts: Vec<JuryVerdict>,
    /// The verifier now assigned, if any.
    pub assignee: Option<Address>,
    /// Its deadline.
    pub deadline: u64,
    /// Every verifier drawn so far (never drawn again for this claim).
    pub served: Vec<Address>,
    /// The appeal under way, if the first verdict was appealed; `verdicts` then holds the
    /// appeal jury's verdicts only.
    pub appeal: Option<ServingAppeal>,
}

/// An appeal of a standing verdict: a fresh jury judges the receipt again.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct ServingAppeal {
    /// The party the verdict went against: the client of an `honest` verdict, the provider
    /// of a `faulty` one.
    pub appellant: Address,
    /// Held in escrow: back to the appellant if the verdict is overturned (or no appeal jury
    /// can be drawn), to the appeal jury if it is upheld.
    pub deposit: Amount,
    /// The verdict appealed.
    pub appealed: bool,
    /// The first jury's verdicts.
    pub first_verdicts: Vec<JuryVerdict>,
    /// Verifiers drawn before the appeal (the appeal's draws are counted from here).
    pub first_draws: u32,
}

/// One verifier's finding on a revealed receipt.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct JuryVerdict {
    /// Who.
    pub verifier: Address,
    /// `true`: the response is what the model answers to the request.
    pub honest: bool,
    /// Posted at.
    pub height: u64,
}

/// What a provider claimed in its current claim window (see [`claim_window_blocks`]).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    BorshSerialize,
    BorshDeserialize,
    Serialize,
    Deserialize,
)]
pub struct ClaimWindow {
    /// The window's first height.
    pub since: u64,
    /// Claimed in it, ugpu.
    pub claimed: Amount,
}

/// A provider's claim for an acknowledged batch, kept until it is paid or refunded.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct Claim {
    /// Id.
    pub id: u64,
    /// Lease.
    pub lease_id: u64,
    /// First request number covered.
    pub first_seq: u64,
    /// One past the last request number covered.
    pub end_seq: u64,
    /// Receipts in the batch.
    pub count: u64,
    /// Units.
    pub units: u128,
    /// Merkle root of the receipts.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub root: [u8; 32],
    /// What it pays the provider, ugpu.
    pub amount: Amount,
    /// Reserved from the deposit for an audit's fee, ugpu.
    pub audit_reserve: Amount,
    /// Posted at.
    pub height: u64,
    /// Stage.
    pub stage: ClaimStage,
}

impl Claim {
    /// The appeal deposit this claim holds in escrow (0 without an appeal).
    pub fn appeal_deposit(&self) -> Amount {
        match &self.stage {
            ClaimStage::Judging(j) | ClaimStage::Standing { judgement: j, .. } => {
                j.appeal.as_ref().map_or(0, |a| a.deposit)
            }
            ClaimStage::Posted | ClaimStage::AwaitingReveal { .. } => 0,
        }
    }
}

/// What an end-block timer does.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize,
)]
pub enum Timer {
    /// Variant 0: clear the order's bids.
    Clear(u64),
    /// Variant 1: close the order.
    Close(u64),
    /// Variant 2: the lease's report deadline passed.
    Report(u64),
    /// Variant 3: draw the claim's audit.
    Draw(u64),
    /// Variant 4: the claim's reveal deadline passed.
    Reveal(u64),
    /// Variant 5: the claim's verdict deadline passed.
    Verdict(u64),
    /// Variant 6: the claim's appeal window closed: its standing verdict applies.
    Appeal(u64),
}

impl Timer {
    /// Its kind and subject in its state key.
    pub fn key_parts(self) -> (&'static str, u64) {
        match self {
            Timer::Clear(id) => ("clear", id),
            Timer::Close(id) => ("close", id),
            Timer::Report(id) => ("report", id),
            Timer::Draw(id) => ("draw", id),
            Timer::Reveal(id) => ("reveal", id),
            Timer::Verdict(id) => ("verdict", id),
            Timer::Appeal(id) => ("appeal", id),
        }
    }
}
