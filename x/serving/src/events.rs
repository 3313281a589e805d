//! One typed struct per transition; attributes carry `order_id`, `lease_id`, `claim_id`,
//! `provider` and `client` where they apply, so that agents can subscribe to them.

use std::borrow::Cow;

use gpuchain_types::{typed_event, Address, Amount};

typed_event!(
    /// A serving order was opened and its deposit locked.
    ServingOrderOpenedEvent = "serving.order_opened" {
        /// Order.
        order_id: u64,
        /// Client.
        client: Address,
        /// Model name.
        model: String,
        /// `generation` or `embedding`.
        kind: Cow<'static, str>,
        /// Providers wanted.
        providers: u32,
        /// Ceiling price.
        max_price: Amount,
        /// Deposit.
        deposit: Amount,
        /// Last bid height.
        bid_end_height: u64,
    }
);

typed_event!(
    /// A provider bid on a serving order.
    ServingBidEvent = "serving.bid" {
        /// Order.
        order_id: u64,
        /// Bidder.
        provider: Address,
        /// Price.
        price: Amount,
    }
);

typed_event!(
    /// A serving order cleared (`leases` 0: no bids, refunded).
    ServingClearedEvent = "serving.order_cleared" {
        /// Order.
        order_id: u64,
        /// Client.
        client: Address,
        /// Uniform price.
        price: Amount,
        /// Leases opened.
        leases: u32,
        /// Last serving block.
        end_height: u64,
    }
);

typed_event!(
    /// A provider won a serving lease.
    ServingLeaseEvent = "serving.lease_created" {
        /// Lease.
        lease_id: u64,
        /// Order.
        order_id: u64,
        /// Provider.
        provider: Address,
        /// Client.
        client: Address,
        /// Model name.
        model: String,
        /// Price.
        price: Amount,
        /// Last serving block.
        end_height: u64,
    }
);

typed_event!(
    /// A provider claimed an acknowledged batch.
    ServingClaimEvent = "serving.claim" {
        /// Claim.
        claim_id: u64,
        /// Lease.
        lease_id: u64,
        /// Provider.
        provider: Address,
        /// Receipts.
        count: u64,
        /// Units.
        units: u128,
        /// Amount.
        amount: Amount,
    }
);

typed_event!(
    /// A claim was drawn for audit: the receipt at position `index` of its batch must be
    /// revealed by `deadline`.
    ServingAuditEvent = "serving.audit" {
        /// Claim.
        claim_id: u64,
        /// Lease.
        lease_id: u64,
        /// Provider.
        provider: Address,
        /// Client.
        client: Address,
        /// Position in the batch.
        index: u64,
        /// Reveal deadline.
        deadline: u64,
    }
);

typed_event!(
    /// A verifier was drawn to judge a revealed receipt.
    ServingJurorEvent = "serving.juror" {
        /// Claim.
        claim_id: u64,
        /// Lease.
        lease_id: u64,
        /// Verifier.
        verifier: Address,
        /// Verdict deadline.
        deadline: u64,
        /// 1, 2 or 3.
        round: u32,
    }
);

typed_event!(
    /// A drawn verifier stepped down from judging a revealed receipt it cannot judge.
    ServingRecusedEvent = "serving.recused" {
        /// Claim.
        claim_id: u64,
        /// Lease.
        lease_id: u64,
        /// Verifier.
        verifier: Address,
    }
);

typed_event!(
    /// A verifier declared the serving models it judges (replacing what it declared before).
    ServingModelsEvent = "serving.models_declared" {
        /// Verifier.
        verifier: Address,
        /// How many models it judges now.
        models: u64,
    }
);

typed_event!(
    /// A claim was settled: paid to the provider or refunded to the client.
    ServingSettledEvent = "serving.claim_settled" {
        /// Claim.
        claim_id: u64,
        /// Lease.
        lease_id: u64,
        /// Provider.
        provider: Address,
        /// Client.
        client: Address,
        /// Paid to the provider.
        paid: Amount,
        /// Refunded to the client.
        refunded: Amount,
        /// `unaudited`, `honest`, `no_verdict`, `faulty` or `withheld`.
        outcome: Cow<'static, str>,
    }
);

typed_event!(
    /// The client reported a lease; the provider must send a heartbeat by `deadline`.
    ServingReportEvent = "serving.report" {
        /// Lease.
        lease_id: u64,
        /// Provider.
        provider: Address,
        /// Deadline.
        deadline: u64,
    }
);

typed_event!(
    /// A lease was lost (`reason`: `unresponsive` or `faulty`).
    ServingDroppedEvent = "serving.lease_dropped" {
        /// Lease.
        lease_id: u64,
        /// Provider.
        provider: Address,
        /// Why.
        reason: Cow<'static, str>,
    }
);

typed_event!(
    /// A serving order closed and the rest of its deposit went back.
    ServingClosedEvent = "serving.order_closed" {
        /// Order.
        order_id: u64,
        /// Client.
        client: Address,
        /// Refunded.
        refunded: Amount,
    }
);

typed_event!(
    /// A jury's verdict on a claim stands; the party it goes against may appeal until
    /// `appeal_deadline`, after which it applies.
    ServingVerdictStandsEvent = "serving.verdict_stands" {
        /// Claim.
        claim_id: u64,
        /// Lease.
        lease_id: u64,
        /// Provider.
        provider: Address,
        /// Client.
        client: Address,
        /// The verdict.
        honest: bool,
        /// Last block an appeal is taken.
        appeal_deadline: u64,
    }
);

typed_event!(
    /// A standing verdict was appealed: a fresh jury judges the receipt again.
    ServingAppealedEvent = "serving.appealed" {
        /// Claim.
        claim_id: u64,
        /// Lease.
        lease_id: u64,
        /// Who appealed.
        appellant: Address,
        /// The verdict appealed.
        honest: bool,
        /// Locked deposit.
        deposit: Amount,
    }
);
