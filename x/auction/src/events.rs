//! One typed struct per transition, flattened into a [`gpuchain_types::Event`] whose
//! attributes carry `order_id`, `lease_id`, `provider` and `client` where they apply, so that
//! providers and clients can subscribe with CometBFT websocket queries.

use std::borrow::Cow;

use gpuchain_types::{typed_event, Address, Amount};

typed_event!(
    /// An order was posted and its funds locked.
    OrderPostedEvent = "auction.order_posted" {
        /// Order.
        order_id: u64,
        /// Client.
        client: Address,
        /// k.
        replicas: u32,
        /// Max price per replica.
        max_price_per_replica: Amount,
        /// Locked in escrow.
        escrowed: Amount,
        /// Last bid height.
        bid_end_height: u64,
    }
);

typed_event!(
    /// A bid was placed.
    BidPlacedEvent = "auction.bid" {
        /// Order.
        order_id: u64,
        /// Bidder.
        provider: Address,
        /// Price.
        price: Amount,
    }
);

typed_event!(
    /// An order cleared.
    OrderClearedEvent = "auction.order_cleared" {
        /// Order.
        order_id: u64,
        /// Client.
        client: Address,
        /// Price paid to every winner.
        clearing_price: Amount,
        /// Winners.
        winners: u32,
        /// Eligible bids considered.
        bids: u32,
    }
);

typed_event!(
    /// A lease was created for a winner.
    LeaseCreatedEvent = "auction.lease_created" {
        /// Lease.
        lease_id: u64,
        /// Order.
        order_id: u64,
        /// Winner.
        provider: Address,
        /// Client.
        client: Address,
        /// Price.
        price: Amount,
        /// Last commit height.
        deadline_height: u64,
    }
);

typed_event!(
    /// Too few bids; the bid window runs once more.
    OrderReopenedEvent = "auction.order_reopened" {
        /// Order.
        order_id: u64,
        /// Client.
        client: Address,
        /// New last bid height.
        bid_end_height: u64,
    }
);

typed_event!(
    /// An order closed without clearing (`reason`: `cancelled` or `too_few_bids`).
    OrderClosedEvent = "auction.order_closed" {
        /// Order.
        order_id: u64,
        /// Client.
        client: Address,
        /// Why.
        reason: Cow<'static, str>,
    }
);

typed_event!(
    /// Every lease of an order reached a final state.
    OrderSettledEvent = "auction.order_settled" {
        /// Order.
        order_id: u64,
        /// Client.
        client: Address,
    }
);

typed_event!(
    /// Funds went back to the client (`reason` names why).
    RefundEvent = "escrow.refunded" {
        /// Order.
        order_id: u64,
        /// Client.
        client: Address,
        /// Refunded.
        amount: Amount,
        /// Why.
        reason: Cow<'static, str>,
    }
);

typed_event!(
    /// A provider was paid for a lease.
    LeasePaidEvent = "escrow.paid" {
        /// Lease.
        lease_id: u64,
        /// Order.
        order_id: u64,
        /// Provider.
        provider: Address,
        /// Client.
        client: Address,
        /// To the provider (price − verification − take + bonus).
        amount: Amount,
        /// To the fee pool.
        take: Amount,
        /// Loyalty bonus included in `amount`.
        bonus: Amount,
        /// The lease's verification charge, to the verification pool.
        verification: Amount,
    }
);

typed_event!(
    /// A result commitment was recorded.
    ResultCommittedEvent = "verify.committed" {
        /// Lease.
        lease_id: u64,
        /// Order.
        order_id: u64,
        /// Provider.
        provider: Address,
    }
);

typed_event!(
    /// A result was revealed.
    ResultRevealedEvent = "verify.revealed" {
        /// Lease.
        lease_id: u64,
        /// Order.
        order_id: u64,
        /// Provider.
        provider: Address,
        /// Hex result hash.
        result_hash: String,
    }
);

typed_event!(
    /// A lease changed verification state (`state`: accepted, disputed, audit_pending,
    /// faulted, missed, refunded).
    LeaseStateEvent = "verify.lease_state" {
        /// Lease.
        lease_id: u64,
        /// Order.
        order_id: u64,
        /// Provider.
        provider: Address,
        /// Client.
        client: Address,
        /// New state.
        state: Cow<'static, str>,
    }
);

typed_event!(
    /// The provider of a `Comparing` lease stated whether the order's other outputs match its own.
    ReplicasComparedEvent = "verify.replicas_compared" {
        /// Lease.
        lease_id: u64,
        /// Order.
        order_id: u64,
        /// Provider.
        provider: Address,
        /// What it stated.
        consistent: bool,
    }
);

typed_event!(
    /// A closed order and its bids and leases were deleted from state.
    OrderRetiredEvent = "auction.order_retired" {
        /// Order.
        order_id: u64,
        /// Client.
        client: Address,
        /// Leases deleted with it.
        leases: u32,
    }
);

typed_event!(
    /// The client of a lease confirmed it fetched the revealed output.
    ReceiptConfirmedEvent = "auction.receipt_confirmed" {
        /// Lease.
        lease_id: u64,
        /// Order.
        order_id: u64,
        /// Client.
        client: Address,
    }
);

typed_event!(
    /// A lone result was sampled for audit.
    AuditSampledEvent = "verify.audit_sampled" {
        /// Lease.
        lease_id: u64,
        /// Order.
        order_id: u64,
        /// Provider.
        provider: Address,
        /// Probability used.
        probability_ppm: u32,
    }
);

typed_event!(
    /// The fee pool was split.
    FeePoolDistributedEvent = "distribution.fee_pool" {
        /// Total split.
        amount: Amount,
        /// To validators' rewards.
        validators: Amount,
        /// To the community pool.
        community: Amount,
        /// To the verification pool.
        verification: Amount,
    }
);

typed_event!(
    /// A validator withdrew its rewards.
    RewardsWithdrawnEvent = "distribution.rewards_withdrawn" {
        /// Validator operator.
        validator: Address,
        /// Withdrawn.
        amount: Amount,
    }
);
