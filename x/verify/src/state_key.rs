//! Verify state keys. The chain state is a public API. Numeric segments are zero-padded to
//! 20 digits so that key order is numeric order; end-block queues are keyed by height first.
//!
//! Query prefixes (`/prefix/<prefix>`): `verify/verifiers/` (every [`crate::Verifier`]),
//! `verify/cases/` (every [`crate::Case`], by lease id), `verify/challenges/` (open
//! [`crate::Challenge`]s), `verify/unbonding/` (queued [`crate::VerifierUnbonding`]s).

use gpuchain_types::Address;

/// Everything the module keeps: the prefix of all its keys.
pub fn module_prefix() -> &'static str {
    "verify/"
}

/// Module parameters: borsh [`crate::VerifyParams`].
pub fn params() -> &'static str {
    "verify/params"
}

/// One verifier: borsh [`crate::Verifier`].
pub fn verifier(operator: &Address) -> String {
    operator.key_under("verify/verifiers/")
}

/// Prefix of all verifiers.
pub fn verifiers_prefix() -> &'static str {
    "verify/verifiers/"
}

/// The case of a lease: borsh [`crate::Case`].
pub fn case(lease_id: u64) -> String {
    format!("verify/cases/{lease_id:020}")
}

/// Prefix of all cases.
pub fn cases_prefix() -> &'static str {
    "verify/cases/"
}

/// Timer of a case (verdict deadline or appeal-window end) at `height`: borsh `()`.
pub fn case_timer(height: u64, lease_id: u64) -> String {
    format!("verify/case_timers/{height:020}/{lease_id:020}")
}

/// Prefix of the case timers.
pub fn case_timers_prefix() -> &'static str {
    "verify/case_timers/"
}

/// Next unbonding id: borsh `u64`.
pub fn next_unbonding_id() -> &'static str {
    "verify/next_unbonding_id"
}

/// A queued unbonding released at `completion_height`: borsh [`crate::VerifierUnbonding`].
pub fn unbonding(completion_height: u64, id: u64) -> String {
    format!("verify/unbonding/{completion_height:020}/{id:020}")
}

/// Prefix of the unbonding queue.
pub fn unbonding_prefix() -> &'static str {
    "verify/unbonding/"
}

/// Next challenge id: borsh `u64`.
pub fn next_challenge_id() -> &'static str {
    "verify/next_challenge_id"
}

/// One open challenge: borsh [`crate::Challenge`].
pub fn challenge(id: u64) -> String {
    format!("verify/challenges/{id:020}")
}

/// Prefix of the open challenges.
pub fn challenges_prefix() -> &'static str {
    "verify/challenges/"
}

/// Expiry queue of challenges: borsh `()`.
pub fn challenge_expiry(height: u64, id: u64) -> String {
    format!("verify/challenge_expiry/{height:020}/{id:020}")
}

/// Prefix of the challenge expiry queue.
pub fn challenge_expiry_prefix() -> &'static str {
    "verify/challenge_expiry/"
}

/// What the verification pool paid verifiers at one height: borsh `(u64, u128)` (height,
/// amount); overwritten at the next height that pays.
pub fn pool_outflow() -> &'static str {
    "verify/pool_outflow"
}

/// Next owed-fee id: borsh `u64`.
pub fn next_owed_fee_id() -> &'static str {
    "verify/next_owed_fee_id"
}

/// One owed audit fee: borsh [`crate::OwedFee`].
pub fn owed_fee(id: u64) -> String {
    format!("verify/owed_fees/{id:020}")
}

/// Prefix of the owed fees, oldest first.
pub fn owed_fees_prefix() -> &'static str {
    "verify/owed_fees/"
}

/// Marks an order already used by a revealed challenge: borsh `u64` (the challenge id).
pub fn challenged_order(order_id: u64) -> String {
    format!("verify/challenged_orders/{order_id:020}")
}

/// Retirement queue of closed cases: borsh `()`, by the block time it is due (ms since the
/// Unix epoch) and the lease.
pub fn retire_case_queue(due_ms: u64, lease_id: u64) -> String {
    format!("verify/retire_cases/{due_ms:020}/{lease_id:020}")
}

/// Prefix of the case retirement queue.
pub fn retire_case_prefix() -> &'static str {
    "verify/retire_cases/"
}

/// Retirement queue of challenged-order marks: borsh `()`, by the block time it is due (ms)
/// and the order.
pub fn retire_challenged_queue(due_ms: u64, order_id: u64) -> String {
    format!("verify/retire_challenged/{due_ms:020}/{order_id:020}")
}

/// Prefix of the challenged-mark retirement queue.
pub fn retire_challenged_prefix() -> &'static str {
    "verify/retire_challenged/"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexicographic_order_is_numeric_order() {
        let numbers = [0u64, 1, 9, 10, 99, 100, 65_536, u64::MAX - 1, u64::MAX];
        for pair in numbers.windows(2) {
            let (x, y) = (pair[0], pair[1]);
            assert!(case(x) < case(y));
            assert!(challenge(x) < challenge(y));
            assert!(case_timer(x, 9) < case_timer(y, 0));
            assert!(unbonding(x, 9) < unbonding(y, 0));
            assert!(challenge_expiry(x, 9) < challenge_expiry(y, 0));
            assert!(challenged_order(x) < challenged_order(y));
        }
    }

    #[test]
    fn keys_stay_under_their_prefixes_and_parse_back() {
        let a = Address([5; 20]);
        assert!(verifier(&a).starts_with(verifiers_prefix()));
        assert!(case(3).starts_with(cases_prefix()));
        assert!(!case_timer(1, 2).starts_with(cases_prefix()));
        assert!(challenge(3).starts_with(challenges_prefix()));
        assert!(!challenge_expiry(1, 2).starts_with(challenges_prefix()));
        assert!(unbonding(1, 2).starts_with(unbonding_prefix()));
        assert_eq!(gpuchain_types::queue_key_id(&case_timer(12, 34)), Some(34));
        assert_eq!(
            gpuchain_types::queue_key_id(&unbonding(u64::MAX, 0)),
            Some(0)
        );
        assert!(params().starts_with("verify/"));
    }
}
