//! Serving state keys. The chain state is a public API: these strings are documented in
//! docs/protocol.md and must not change. Ids are 20 digits so that key order is numeric order.

use gpuchain_types::Address;

/// Everything the module keeps: the prefix of all its keys.
pub fn module_prefix() -> &'static str {
    "serving/"
}

/// Parameters: borsh [`crate::ServingParams`].
pub fn params() -> &'static str {
    "serving/params"
}

/// The next id of `kind` (`order`, `lease`, `claim`): borsh `u64`.
pub fn next_id(kind: &str) -> String {
    format!("serving/next_id/{kind}")
}

/// One order: borsh [`crate::ServingOrder`].
pub fn order(id: u64) -> String {
    format!("serving/orders/{id:020}")
}

/// Prefix of every order.
pub fn orders_prefix() -> &'static str {
    "serving/orders/"
}

/// One bid: borsh [`crate::ServingBid`].
pub fn bid(order_id: u64, provider: &Address) -> String {
    format!("serving/bids/{order_id:020}/{}", provider.to_hex())
}

/// Prefix of an order's bids, in provider order.
pub fn bids_prefix(order_id: u64) -> String {
    format!("serving/bids/{order_id:020}/")
}

/// One lease: borsh [`crate::ServingLease`].
pub fn lease(id: u64) -> String {
    format!("serving/leases/{id:020}")
}

/// Prefix of every lease.
pub fn leases_prefix() -> &'static str {
    "serving/leases/"
}

/// Index of a provider's leases: borsh `()`.
pub fn lease_by_provider(provider: &Address, lease_id: u64) -> String {
    format!(
        "serving/leases_by_provider/{}/{lease_id:020}",
        provider.to_hex()
    )
}

/// Prefix of a provider's lease index.
pub fn leases_by_provider_prefix(provider: &Address) -> String {
    format!("serving/leases_by_provider/{}/", provider.to_hex())
}

/// The lease id of a [`lease_by_provider`] key.
pub fn indexed_lease_id(key: &str) -> Option<u64> {
    key.rsplit('/').next()?.parse().ok()
}

/// What a provider claimed in its current claim window: borsh [`crate::ClaimWindow`].
pub fn claim_window(provider: &Address) -> String {
    format!("serving/claim_windows/{}", provider.to_hex())
}

/// A claim past its provider's claim window, audited for sure: borsh `()`, deleted with
/// the claim.
pub fn forced_audit(claim_id: u64) -> String {
    format!("serving/forced_audits/{claim_id:020}")
}

/// The serving models a verifier judges: borsh `Vec<[u8; 32]>` (blake3 of the weights),
/// sorted; absent when it declared none.
pub fn judged_models(verifier: &Address) -> String {
    format!("{}{}", judged_models_prefix(), verifier.to_hex())
}

/// Every [`judged_models`] entry.
pub fn judged_models_prefix() -> &'static str {
    "serving/judged_models/"
}

/// Recusals on a claim: borsh `(u32, u32)`, by its first jury and by its appeal jury;
/// deleted with the claim.
pub fn recusals(claim_id: u64) -> String {
    format!("serving/recusals/{claim_id:020}")
}

/// One claim not settled yet: borsh [`crate::Claim`].
pub fn claim(id: u64) -> String {
    format!("serving/claims/{id:020}")
}

/// Prefix of every unsettled claim.
pub fn claims_prefix() -> &'static str {
    "serving/claims/"
}

/// An end-block timer: borsh [`crate::Timer`], due in the end-block of `height`.
pub fn timer(height: u64, kind: &str, id: u64) -> String {
    format!("serving/timers/{height:020}/{kind}/{id:020}")
}

/// Prefix of the timer queue.
pub fn timers_prefix() -> &'static str {
    "serving/timers/"
}

/// Retirement queue: borsh `u64`, the closed order deleted with its leases in the end-block
/// of the first block whose time is at least `due_ms` (ms since the Unix epoch).
pub fn retire_queue(due_ms: u64, order_id: u64) -> String {
    format!("serving/retire_queue/{due_ms:020}/{order_id:020}")
}

/// Prefix of the retirement queue.
pub fn retire_queue_prefix() -> &'static str {
    "serving/retire_queue/"
}
