//! Auction state keys. The chain state is a public API. Numeric segments are zero-padded to
//! 20 digits so that key order is numeric order; end-block queues are keyed by height first.

use gpuchain_types::Address;

/// Everything the module keeps: the prefix of all its keys.
pub fn module_prefix() -> &'static str {
    "auction/"
}

/// Every bid of every order.
pub fn all_bids_prefix() -> &'static str {
    "auction/bids/"
}

/// Every lease and both lease indexes (by order and by provider).
pub fn leases_and_indexes_prefix() -> &'static str {
    "auction/leases"
}

/// Module parameters: borsh [`crate::AuctionParams`].
pub fn params() -> &'static str {
    "auction/params"
}

/// Next order id: borsh `u64`.
pub fn next_order_id() -> &'static str {
    "auction/next_order_id"
}

/// Next lease id: borsh `u64`.
pub fn next_lease_id() -> &'static str {
    "auction/next_lease_id"
}

/// One order: borsh [`crate::Order`].
pub fn order(id: u64) -> String {
    format!("auction/orders/{id:020}")
}

/// Prefix of all orders.
pub fn orders_prefix() -> &'static str {
    "auction/orders/"
}

/// Index of a client's orders: borsh `()`.
pub fn order_by_client(client: &Address, id: u64) -> String {
    format!("auction/orders_by_client/{}/{id:020}", client.to_hex())
}

/// Prefix of one client's order index.
pub fn orders_by_client_prefix(client: &Address) -> String {
    format!("auction/orders_by_client/{}/", client.to_hex())
}

/// One bid: borsh [`crate::Bid`].
pub fn bid(order_id: u64, provider: &Address) -> String {
    format!("auction/bids/{order_id:020}/{}", provider.to_hex())
}

/// Prefix of one order's bids.
pub fn bids_prefix(order_id: u64) -> String {
    format!("auction/bids/{order_id:020}/")
}

/// Number of bids on an order: borsh `u32` (so a bid need not scan the others).
pub fn bid_count(order_id: u64) -> String {
    format!("auction/bid_counts/{order_id:020}")
}

/// Clearing queue: the order clears in the end-block of `height`. Borsh `()`.
pub fn clearing_queue(height: u64, order_id: u64) -> String {
    format!("auction/clearing_queue/{height:020}/{order_id:020}")
}

/// Prefix of the clearing queue.
pub fn clearing_queue_prefix() -> &'static str {
    "auction/clearing_queue/"
}

/// One lease: borsh [`crate::Lease`].
pub fn lease(id: u64) -> String {
    format!("auction/leases/{id:020}")
}

/// Prefix of all leases.
pub fn leases_prefix() -> &'static str {
    "auction/leases/"
}

/// Index of an order's leases: borsh `()`.
pub fn lease_by_order(order_id: u64, lease_id: u64) -> String {
    format!("auction/leases_by_order/{order_id:020}/{lease_id:020}")
}

/// Prefix of one order's lease index.
pub fn leases_by_order_prefix(order_id: u64) -> String {
    format!("auction/leases_by_order/{order_id:020}/")
}

/// Index of a provider's leases: borsh `()`.
pub fn lease_by_provider(provider: &Address, lease_id: u64) -> String {
    format!(
        "auction/leases_by_provider/{}/{lease_id:020}",
        provider.to_hex()
    )
}

/// Prefix of one provider's lease index.
pub fn leases_by_provider_prefix(provider: &Address) -> String {
    format!("auction/leases_by_provider/{}/", provider.to_hex())
}

/// The lease id of a key of either lease index ([`lease_by_order`], [`lease_by_provider`]):
/// its last segment.
pub fn indexed_lease_id(key: &str) -> Option<u64> {
    key.rsplit('/').next()?.parse().ok()
}

/// Reveal-window queue: the order's unrevealed leases are missed in the end-block of
/// `height`. Borsh `()`.
pub fn reveal_queue(height: u64, order_id: u64) -> String {
    format!("auction/reveal_queue/{height:020}/{order_id:020}")
}

/// Prefix of the reveal-window queue.
pub fn reveal_queue_prefix() -> &'static str {
    "auction/reveal_queue/"
}

/// Retirement queue: the closed order and everything stored for it (bids, leases, their
/// indexes) are deleted in the end-block of the first block whose time is at least `due_ms`
/// (block time, milliseconds since the Unix epoch), `retention_secs` after it closed.
/// Borsh `()`.
pub fn retire_queue(due_ms: u64, order_id: u64) -> String {
    format!("auction/retire_queue/{due_ms:020}/{order_id:020}")
}

/// Prefix of the retirement queue.
pub fn retire_queue_prefix() -> &'static str {
    "auction/retire_queue/"
}

/// Timer queue of a lease (payout or verdict deadline) at `height`. Borsh `()`.
pub fn lease_timer(height: u64, lease_id: u64) -> String {
    format!("auction/lease_timers/{height:020}/{lease_id:020}")
}

/// Prefix of the lease timer queue.
pub fn lease_timers_prefix() -> &'static str {
    "auction/lease_timers/"
}

/// What the provider of a `Comparing` lease stated (`MsgCompareReplicas`): borsh `bool`.
/// Deleted when the order's comparison closes.
pub fn comparison(lease_id: u64) -> String {
    format!("auction/comparisons/{lease_id:020}")
}

/// Index of the leases waiting for a verdict (`AuditPending` or `Disputed`), for the
/// verification module's assignment: borsh `()`.
pub fn verdict_pending(lease_id: u64) -> String {
    format!("auction/verdict_pending/{lease_id:020}")
}

/// Prefix of the verdict-pending index.
pub fn verdict_pending_prefix() -> &'static str {
    "auction/verdict_pending/"
}

/// A validator's accrued, unwithdrawn rewards: borsh `u128`.
pub fn reward(validator: &Address) -> String {
    validator.key_under("auction/rewards/")
}

/// Prefix of all accrued rewards.
pub fn rewards_prefix() -> &'static str {
    "auction/rewards/"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_lease_indexes_give_back_the_lease_id() {
        let p = Address([3; 20]);
        assert_eq!(indexed_lease_id(&lease_by_order(7, 42)), Some(42));
        assert_eq!(
            indexed_lease_id(&lease_by_provider(&p, u64::MAX)),
            Some(u64::MAX)
        );
        assert_eq!(indexed_lease_id(&leases_by_order_prefix(7)), None);
    }

    #[test]
    fn the_wide_prefixes_cover_what_they_name_and_nothing_else() {
        let p = Address([3; 20]);
        for key in [lease(1), lease_by_order(2, 1), lease_by_provider(&p, 1)] {
            assert!(key.starts_with(leases_and_indexes_prefix()), "{key}");
        }
        assert!(bid(4, &p).starts_with(all_bids_prefix()));
        assert!(!bid_count(4).starts_with(all_bids_prefix()));
        assert!(!order(1).starts_with(leases_and_indexes_prefix()));
        for key in [params().to_string(), order(1), bid(1, &p), reward(&p)] {
            assert!(key.starts_with(module_prefix()), "{key}");
        }
    }

    #[test]
    fn lexicographic_order_is_numeric_order() {
        let numbers = [0u64, 1, 9, 10, 99, 100, 65_536, u64::MAX - 1, u64::MAX];
        let a = Address([5; 20]);
        for pair in numbers.windows(2) {
            let (x, y) = (pair[0], pair[1]);
            assert!(order(x) < order(y));
            assert!(lease(x) < lease(y));
            assert!(clearing_queue(x, 9) < clearing_queue(y, 0));
            assert!(reveal_queue(x, 9) < reveal_queue(y, 0));
            assert!(lease_timer(x, 9) < lease_timer(y, 0));
            assert!(lease_by_order(3, x) < lease_by_order(3, y));
            assert!(lease_by_provider(&a, x) < lease_by_provider(&a, y));
            assert!(order_by_client(&a, x) < order_by_client(&a, y));
            assert!(bids_prefix(x) < bids_prefix(y));
        }
    }

    #[test]
    fn keys_stay_under_their_prefixes_and_parse_back() {
        let a = Address([5; 20]);
        assert!(order(1).starts_with(orders_prefix()));
        assert!(lease(1).starts_with(leases_prefix()));
        assert!(!lease_by_order(1, 2).starts_with(leases_prefix()));
        assert!(bid(7, &a).starts_with(&bids_prefix(7)));
        assert!(!bid(17, &a).starts_with(&bids_prefix(1)));
        assert_eq!(
            gpuchain_types::queue_key_id(&clearing_queue(12, 34)),
            Some(34)
        );
        assert_eq!(
            gpuchain_types::queue_key_id(&lease_timer(u64::MAX, 0)),
            Some(0)
        );
    }
}
