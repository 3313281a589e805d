//! One typed struct per transition, flattened into a [`gpuchain_types::Event`] whose
//! attributes carry `lease_id` and `verifier` where they apply, so that verifier agents can
//! subscribe with CometBFT websocket queries (`verify.assigned.verifier='gpu1…'`).

use std::borrow::Cow;

use gpuchain_types::{typed_event, Address, Amount};

typed_event!(
    /// A verifier registered.
    VerifierRegisteredEvent = "verify.verifier_registered" {
        /// Verifier.
        verifier: Address,
        /// Bond.
        bond: Amount,
    }
);

typed_event!(
    /// A verifier's bond grew.
    VerifierBondedEvent = "verify.verifier_bonded" {
        /// Verifier.
        verifier: Address,
        /// Added.
        amount: Amount,
        /// Bonded now.
        bonded: Amount,
    }
);

typed_event!(
    /// Verifier stake started unbonding.
    VerifierUnbondingEvent = "verify.unbonding_started" {
        /// Verifier.
        verifier: Address,
        /// ugpu.
        amount: Amount,
        /// Paid out in the end-block of this height.
        completion_height: u64,
    }
);

typed_event!(
    /// Unbonded verifier stake was paid out.
    VerifierUnbondedEvent = "verify.unbonding_completed" {
        /// Verifier.
        verifier: Address,
        /// ugpu.
        amount: Amount,
    }
);

typed_event!(
    /// A verifier was assigned to a lease (round 0: audit or dispute, 1: appeal, 2:
    /// tie-break; rounds 1 and 2 use the canonical path).
    AssignedEvent = "verify.assigned" {
        /// Lease.
        lease_id: u64,
        /// Assigned verifier.
        verifier: Address,
        /// Last height its verdict is taken.
        deadline: u64,
        /// Round.
        round: u8,
        /// Provider of the lease.
        provider: Address,
    }
);

typed_event!(
    /// A verdict was posted.
    VerdictPostedEvent = "verify.verdict" {
        /// Lease.
        lease_id: u64,
        /// Verifier.
        verifier: Address,
        /// `honest` or `faulty`.
        verdict: Cow<'static, str>,
        /// Hex output hash.
        output_hash: String,
        /// Round.
        round: u8,
    }
);

typed_event!(
    /// A first verdict was appealed.
    AppealedEvent = "verify.appealed" {
        /// Lease.
        lease_id: u64,
        /// Who appealed.
        appellant: Address,
        /// Locked deposit.
        deposit: Amount,
    }
);

typed_event!(
    /// An `honest` first verdict drew a spot check: a second verifier re-judges the result
    /// before it is paid.
    SpotCheckedEvent = "verify.spot_checked" {
        /// Lease.
        lease_id: u64,
        /// The verifier whose verdict is checked.
        checked: Address,
    }
);

typed_event!(
    /// A case ended (`verdict`: `honest`, `faulty` or `none`).
    CaseSettledEvent = "verify.settled" {
        /// Lease.
        lease_id: u64,
        /// Standing verdict.
        verdict: Cow<'static, str>,
        /// Whether an appeal overturned the first verdict.
        overturned: bool,
    }
);

typed_event!(
    /// A verifier was slashed (`reason`: `missed_deadline` or `wrong_verdict`) and jailed.
    VerifierSlashedEvent = "verify.verifier_slashed" {
        /// Verifier.
        verifier: Address,
        /// Lease of the case.
        lease_id: u64,
        /// Why.
        reason: Cow<'static, str>,
        /// Taken from the bond.
        amount: Amount,
        /// Jailed until.
        jailed_until: u64,
    }
);

typed_event!(
    /// A verifier was paid for a standing verdict.
    AuditFeePaidEvent = "verify.audit_fee_paid" {
        /// Lease.
        lease_id: u64,
        /// Verifier.
        verifier: Address,
        /// ugpu from the verification pool.
        amount: Amount,
    }
);

typed_event!(
    /// An audit fee the verification pool could not pay in this block: owed, paid first in
    /// later blocks.
    AuditFeeOwedEvent = "verify.audit_fee_owed" {
        /// Lease.
        lease_id: u64,
        /// Verifier.
        verifier: Address,
        /// ugpu owed.
        amount: Amount,
    }
);

typed_event!(
    /// A challenge was committed.
    ChallengeCommittedEvent = "verify.challenge_committed" {
        /// Challenge.
        challenge_id: u64,
        /// Verifier.
        verifier: Address,
        /// Expires at.
        expires_height: u64,
    }
);

typed_event!(
    /// A challenge was revealed against a ringer order.
    ChallengeRevealedEvent = "verify.challenge_revealed" {
        /// Challenge.
        challenge_id: u64,
        /// Ringer order.
        order_id: u64,
        /// Verifier.
        verifier: Address,
        /// Leases that returned the expected hash.
        passed: u32,
        /// Leases that did not (each now has the verifier's faulty verdict).
        failed: u32,
    }
);

typed_event!(
    /// A committed challenge expired unrevealed.
    ChallengeExpiredEvent = "verify.challenge_expired" {
        /// Challenge.
        challenge_id: u64,
        /// Verifier.
        verifier: Address,
    }
);

typed_event!(
    /// The assigned verifier stepped down from a case it cannot check.
    RecusedEvent = "verify.recused" {
        /// Lease.
        lease_id: u64,
        /// The verifier.
        verifier: Address,
        /// Round.
        round: u8,
    }
);
