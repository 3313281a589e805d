//! The operation table. Every operation is one row of [`OPS`]: a name, a weight, whether it
//! is a fault (off in the liveness phase) or new work (also off), what the chain must answer,
//! and a generator that reads committed state and returns the transactions to send. A
//! generator whose preconditions fail returns [`Planned::NoOp`]. Adding an operation is
//! adding one function and one row here.

mod auction;
mod bank;
mod malformed;
mod ringer;
mod serving;
mod staking;
mod verify;
mod world;

pub use auction::drain;
pub use serving::drain as drain_serving;
pub use verify::drain as drain_verdicts;
pub use world::{Gen, World};

/// What a generator decided.
#[derive(Debug)]
pub enum Planned {
    /// Preconditions failed: nothing happens.
    NoOp,
    /// Raw transactions for the mempool, in order.
    Txs(Vec<Vec<u8>>),
    /// An effect outside transactions (a validator going offline, evidence).
    Effect,
}

/// When an operation may run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Always, including the liveness phase.
    Honest,
    /// Creates new obligations (orders): only while faults are on.
    NewWork,
    /// A faulty actor: only while faults are on.
    Fault,
}

/// What the chain must do with an operation's transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Accepted or rejected, depending on state.
    Any,
    /// Every transaction is refused by CheckTx and fails (or is dropped) in the block.
    Rejected,
    /// At most one of the transactions succeeds (same nonce twice).
    AtMostOne,
}

/// One row of the table.
pub struct OpSpec {
    /// Name in reports.
    pub name: &'static str,
    /// Relative frequency.
    pub weight: u64,
    /// When it may run.
    pub kind: Kind,
    /// What the chain must answer.
    pub expect: Expect,
    /// The generator.
    pub run: fn(&mut Gen<'_>) -> Planned,
}

const fn op(
    name: &'static str,
    weight: u64,
    kind: Kind,
    expect: Expect,
    run: fn(&mut Gen<'_>) -> Planned,
) -> OpSpec {
    OpSpec {
        name,
        weight,
        kind,
        expect,
        run,
    }
}

use Expect::{Any, AtMostOne, Rejected};
use Kind::{Fault, Honest, NewWork};

/// Every operation.
pub const OPS: &[OpSpec] = &[
    // x/bank
    op("bank.send", 10, Honest, Any, bank::send),
    op("bank.multi_send", 2, Honest, Any, bank::multi_send),
    op(
        "bank.send_overdraft",
        2,
        Fault,
        Rejected,
        bank::send_overdraft,
    ),
    // x/staking: providers
    op(
        "staking.register_provider",
        2,
        Honest,
        Any,
        staking::register_provider,
    ),
    op(
        "staking.register_bad_attrs",
        1,
        Fault,
        Rejected,
        staking::register_bad_attrs,
    ),
    op(
        "staking.bond_provider",
        2,
        Honest,
        Any,
        staking::bond_provider,
    ),
    op(
        "staking.unbond_provider",
        2,
        Honest,
        Any,
        staking::unbond_provider,
    ),
    op(
        "staking.update_provider",
        1,
        Honest,
        Any,
        staking::update_provider,
    ),
    op(
        "staking.deregister_provider",
        1,
        Honest,
        Any,
        staking::deregister_provider,
    ),
    // x/staking: validators
    op(
        "staking.create_validator",
        1,
        Honest,
        Any,
        staking::create_validator,
    ),
    op(
        "staking.delegate_self",
        2,
        Honest,
        Any,
        staking::delegate_self,
    ),
    op(
        "staking.unbond_validator",
        1,
        Honest,
        Any,
        staking::unbond_validator,
    ),
    op(
        "staking.edit_validator",
        1,
        Honest,
        Any,
        staking::edit_validator,
    ),
    // x/slashing
    op("slashing.unjail", 3, Honest, Any, staking::unjail),
    op(
        "slashing.unjail_early",
        1,
        Fault,
        Rejected,
        staking::unjail_early,
    ),
    op("validator.go_offline", 1, Fault, Any, staking::go_offline),
    op(
        "validator.come_online",
        2,
        Honest,
        Any,
        staking::come_online,
    ),
    op("validator.double_sign", 1, Fault, Any, staking::double_sign),
    // x/auction
    op("auction.post_order", 8, NewWork, Any, auction::post_order),
    op(
        "auction.post_order_overdraft",
        1,
        Fault,
        Rejected,
        auction::post_order_overdraft,
    ),
    op(
        "auction.cancel_order",
        2,
        Honest,
        Any,
        auction::cancel_order,
    ),
    op(
        "auction.cancel_foreign_order",
        1,
        Fault,
        Rejected,
        auction::cancel_foreign_order,
    ),
    op("auction.bid", 20, Honest, Any, auction::bid),
    op(
        "auction.bid_ineligible",
        2,
        Fault,
        Rejected,
        auction::bid_ineligible,
    ),
    op(
        "auction.bid_over_max",
        1,
        Fault,
        Rejected,
        auction::bid_over_max,
    ),
    op("auction.commit", 10, Honest, Any, auction::commit),
    op(
        "auction.commit_foreign_lease",
        1,
        Fault,
        Rejected,
        auction::commit_foreign_lease,
    ),
    op("auction.reveal", 10, Honest, Any, auction::reveal),
    op(
        "auction.compare_replicas",
        8,
        Honest,
        Any,
        auction::compare_replicas,
    ),
    op(
        "auction.confirm_receipt",
        4,
        Honest,
        Any,
        auction::confirm_receipt,
    ),
    op(
        "auction.confirm_own_output",
        1,
        Fault,
        Rejected,
        auction::confirm_own_output,
    ),
    op(
        "auction.reveal_wrong_salt",
        2,
        Fault,
        Rejected,
        auction::reveal_wrong_salt,
    ),
    op(
        "auction.withdraw_rewards",
        1,
        Honest,
        Any,
        auction::withdraw_rewards,
    ),
    // x/verify
    op(
        "verify.register_verifier",
        1,
        Honest,
        Any,
        verify::register_verifier,
    ),
    op(
        "verify.bond_verifier",
        1,
        Honest,
        Any,
        verify::bond_verifier,
    ),
    op(
        "verify.unbond_verifier",
        1,
        Honest,
        Any,
        verify::unbond_verifier,
    ),
    op(
        "verify.submit_verdict",
        10,
        Honest,
        Any,
        verify::submit_verdict,
    ),
    op("verify.recuse", 1, Honest, Any, verify::recuse),
    op("verify.appeal", 2, Fault, Any, verify::appeal),
    op(
        "verify.verdict_not_assigned",
        1,
        Fault,
        Rejected,
        verify::verdict_not_assigned,
    ),
    op(
        "verify.verdict_twice",
        1,
        Fault,
        Rejected,
        verify::verdict_twice,
    ),
    op(
        "verify.verdict_non_verifier",
        1,
        Fault,
        Rejected,
        verify::verdict_non_verifier,
    ),
    // x/verify: ringers
    op("verify.commit_challenge", 2, NewWork, Any, ringer::commit),
    op(
        "verify.post_ringer_order",
        3,
        NewWork,
        Any,
        ringer::post_order,
    ),
    op("verify.reveal_challenge", 4, Honest, Any, ringer::reveal),
    op(
        "verify.reveal_wrong_salt",
        1,
        Fault,
        Rejected,
        ringer::reveal_wrong_salt,
    ),
    // malformed and adversarial transactions
    // x/serving
    op("serving.open", 3, NewWork, Any, serving::open),
    op("serving.bid", 6, Honest, Any, serving::bid),
    op("serving.claim", 8, Honest, Any, serving::claim),
    op(
        "serving.forged_claim",
        1,
        Fault,
        Rejected,
        serving::forged_claim,
    ),
    op("serving.reveal", 4, Honest, Any, serving::reveal),
    op("serving.verdict", 4, Honest, Any, serving::verdict),
    op("serving.appeal", 6, Honest, Any, serving::appeal),
    op("serving.report", 1, Honest, Any, serving::report),
    op("serving.heartbeat", 3, Honest, Any, serving::heartbeat),
    op("serving.end", 1, Honest, Any, serving::end),
    op("serving.models", 1, Honest, Any, serving::models),
    op(
        "serving.bad_models",
        1,
        Fault,
        Rejected,
        serving::bad_models,
    ),
    op(
        "tx.garbage_bytes",
        2,
        Fault,
        Rejected,
        malformed::garbage_bytes,
    ),
    op("tx.truncated", 1, Fault, Rejected, malformed::truncated),
    op(
        "tx.bad_signature",
        2,
        Fault,
        Rejected,
        malformed::bad_signature,
    ),
    op(
        "tx.wrong_chain_id",
        1,
        Fault,
        Rejected,
        malformed::wrong_chain_id,
    ),
    op("tx.fee_too_low", 1, Fault, Rejected, malformed::fee_too_low),
    op(
        "tx.double_spend_nonce",
        2,
        Fault,
        AtMostOne,
        malformed::double_spend_nonce,
    ),
    op("tx.replay", 1, Fault, Rejected, malformed::replay),
];

/// Picks an operation by weight among those allowed now.
pub fn pick(rng: &mut crate::Rng, faults_on: bool) -> Option<usize> {
    let allowed = |o: &OpSpec| faults_on || o.kind == Kind::Honest;
    let total: u64 = OPS.iter().filter(|o| allowed(o)).map(|o| o.weight).sum();
    let mut draw = rng.below(total);
    for (i, o) in OPS.iter().enumerate() {
        if !allowed(o) {
            continue;
        }
        if draw < o.weight {
            return Some(i);
        }
        draw -= o.weight;
    }
    None
}
