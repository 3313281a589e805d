//! The one interface between judging and paying: everything x/verify may do to the market
//! or read of its money rules. x/verify holds a lease while it judges it
//! ([`hold_lease`]), applies the standing verdict ([`apply_verdict`]: pay, refund or
//! slash), and charges and prices verification with the auction's own rules (audit and
//! availability fees, the dispute reserve kept in escrow, the wrong-result slash, the
//! audit chance and its deterrence floor); fees flow through the [`verification_pool`].
//! Nothing else of the auction's internals (its indexes, queues or stored layouts) is
//! used by x/verify, which `tests/tests/architecture_is_layered.rs` checks.

pub use crate::audit::{
    any_of, audit_chance, audit_fee, availability_fee, penalty_per_lease, verification_charge,
    wrong_result_slash_of,
};
pub use crate::escrow::dispute_reserve;
pub use crate::judge::{apply_verdict, hold_lease, wrong_result_slash, Verdict};
pub use crate::module_account::verification_pool;
