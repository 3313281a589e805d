//! The invariants of the modules' committed state that the module table checks
//! ([`super::check_invariants`]) beside each module's own: bonds held by the pools, lease
//! counters and closed orders, verify cases.

use std::collections::BTreeMap;

use gpuchain_auction::{AuctionRead, LeaseState};
use gpuchain_bank::BankRead;
use gpuchain_staking::{module_account, StakingRead};
use gpuchain_types::{Address, StateRead, StateReadExt};
use gpuchain_verify::{CaseStage, VerifyRead};

/// Sums without overflow, or says what overflowed.
pub fn sum(values: impl IntoIterator<Item = u128>, what: &str) -> Result<u128, String> {
    values
        .into_iter()
        .try_fold(0u128, |acc, v| acc.checked_add(v))
        .ok_or_else(|| format!("{what} overflows u128"))
}

/// `Ok` when `ok`, else the error `what` says.
pub fn ensure(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

/// The bonded pool holds every validator and provider bond, the unbonding pool every queued
/// entry.
pub(crate) fn stakes<S: StateRead>(s: &S) -> Result<(), String> {
    let bonds = sum(
        s.validators()
            .iter()
            .map(|v| v.bonded)
            .chain(s.providers().iter().map(|p| p.bonded)),
        "bonds",
    )?;
    let pool = s.balance(&module_account::bonded_pool());
    ensure(pool == bonds, || {
        format!("bonded pool holds {pool}, bonds sum to {bonds}")
    })?;
    let queued = sum(s.unbonding_entries().iter().map(|e| e.amount), "unbonding")?;
    let pool = s.balance(&module_account::unbonding_pool());
    ensure(pool == queued, || {
        format!("unbonding pool holds {pool}, queue sums to {queued}")
    })
}

/// Each provider's open-lease counter equals its leases not yet final (market and serving); a closed order holds
/// nothing in escrow and has only final leases; verification charges are bounded by prices.
pub(crate) fn leases<S: StateRead>(s: &S) -> Result<(), String> {
    let mut open: BTreeMap<Address, u64> = BTreeMap::new();
    let all = s.leases();
    for l in all.iter().filter(|l| !l.state.is_final()) {
        let n = open.entry(l.provider).or_default();
        *n = n.saturating_add(1);
    }
    // A serving lease counts until its order closed and its last claim settled.
    for l in gpuchain_serving::ServingRead::serving_leases(s)
        .iter()
        .filter(|l| l.state != gpuchain_serving::ServingLeaseState::Closed || l.open_claims > 0)
    {
        let n = open.entry(l.provider).or_default();
        *n = n.saturating_add(1);
    }
    for p in s.providers() {
        let want = open.get(&p.operator).copied().unwrap_or(0);
        let got = s.open_leases(&p.operator);
        ensure(got == want, || {
            format!(
                "provider {} counts {got} open leases, has {want}",
                p.operator
            )
        })?;
    }
    // A lease is charged for verification only once judged, never more than its price; a
    // comparison is kept only while its lease compares.
    for l in &all {
        ensure(
            s.comparison(l.id).is_none() || l.state == LeaseState::Comparing,
            || format!("lease {} keeps a comparison in state {:?}", l.id, l.state),
        )?;
        // No lease is paid before someone other than its provider fetched its output: the
        // client's receipt, a verdict, or the other replicas' comparison. (The chain pays an
        // unchecked one only when no verifier could check it for `max_verdict_wait_blocks`,
        // which the simulated verifiers never let happen.)
        ensure(l.state != LeaseState::Paid || l.fetched, || {
            format!("lease {} was paid before anyone fetched its output", l.id)
        })?;
        // Retirement takes a lease only with its order.
        ensure(s.order(l.order_id).is_some(), || {
            format!("lease {} outlived its order {}", l.id, l.order_id)
        })?;
        let judged = l.result_hash.is_some();
        ensure(l.verification_charge <= l.price, || {
            format!(
                "lease {} is charged {} for verification, above its price {}",
                l.id, l.verification_charge, l.price
            )
        })?;
        ensure(judged || l.verification_charge == 0, || {
            format!(
                "lease {} is charged {} before any result was judged",
                l.id, l.verification_charge
            )
        })?;
    }
    // Only closed orders wait for retirement, and nothing retired while funds or cases
    // depend on it: a queued order still present is closed with every lease final.
    for (key, ()) in s.prefix::<()>(gpuchain_auction::state_key::retire_queue_prefix()) {
        let Some(id) = gpuchain_types::queue_key_id(&key) else {
            return Err(format!("unreadable retirement entry {key}"));
        };
        if let Some(o) = s.order(id) {
            ensure(o.state.is_closed() && o.escrowed == 0, || {
                format!("order {id} is queued for retirement while {:?}", o.state)
            })?;
        }
    }
    let live_orders: std::collections::BTreeSet<u64> = all
        .iter()
        .filter(|l| !l.state.is_final())
        .map(|l| l.order_id)
        .collect();
    for o in s.orders() {
        if o.state.is_closed() {
            ensure(o.escrowed == 0, || {
                format!("closed order {} still escrows {}", o.id, o.escrowed)
            })?;
            ensure(!live_orders.contains(&o.id), || {
                format!("closed order {} has a live lease", o.id)
            })?;
        }
    }
    Ok(())
}

/// An unsettled verify case is about a lease that is not final yet (the module holds it),
/// and a case awaiting a verdict has an assignee.
pub(crate) fn verify_cases<S: StateRead>(s: &S) -> Result<(), String> {
    for c in s.cases() {
        if c.stage == CaseStage::Closed {
            continue;
        }
        let lease = s.lease(c.lease_id);
        ensure(lease.as_ref().is_some_and(|l| !l.state.is_final()), || {
            format!(
                "case {} is {:?} but its lease is {:?}",
                c.lease_id,
                c.stage,
                lease.as_ref().map(|l| l.state)
            )
        })?;
        ensure(
            c.stage != CaseStage::AwaitingVerdict || c.assignee.is_some(),
            || format!("case {} awaits a verdict with nobody assigned", c.lease_id),
        )?;
    }
    Ok(())
}
