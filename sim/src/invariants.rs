//! Invariants computed from committed state after every block. Each returns the number of
//! checks it made, or what is broken.

use std::collections::BTreeMap;

use gpuchain_auction::{escrow, AuctionRead, LeaseState, OrderState};
use gpuchain_bank::BankRead;
use gpuchain_reputation::ReputationRead;
use gpuchain_slashing::SlashingRead;
use gpuchain_staking::{module_account, StakingRead};
use gpuchain_types::{Address, StateRead, StateReadExt, PPM_ONE};
use gpuchain_verify::{CaseStage, VerifyRead};

/// Sums without overflow, or says what overflowed.
fn sum(values: impl IntoIterator<Item = u128>, what: &str) -> Result<u128, String> {
    values
        .into_iter()
        .try_fold(0u128, |acc, v| acc.checked_add(v))
        .ok_or_else(|| format!("{what} overflows u128"))
}

fn ensure(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

/// Every safety invariant; `initial_supply` is the supply at genesis, `providers` every
/// account that ever was a provider.
pub fn check_all<S: StateRead>(
    s: &S,
    height: u64,
    initial_supply: u128,
    providers: &[Address],
) -> Result<u64, String> {
    supply(s, initial_supply)?;
    escrow::check_invariants(s)?;
    stakes(s)?;
    leases(s)?;
    reputation(s, height, providers)?;
    gpuchain_verify::check_invariants(s)?;
    verify_cases(s)?;
    gpuchain_serving::check_invariants(s)?;
    Ok(8)
}

/// No balance exceeds supply (none is negative: amounts are unsigned and every stored
/// balance decodes), the balances sum to the supply, and only slashes burned anything.
fn supply<S: StateRead>(s: &S, initial_supply: u128) -> Result<(), String> {
    let balances = s.all_balances();
    let supply = s.supply();
    if let Some((who, v)) = balances.iter().find(|(_, v)| *v > supply) {
        return Err(format!("balance of {who} ({v}) exceeds supply {supply}"));
    }
    let total = sum(balances.iter().map(|(_, v)| *v), "balances")?;
    ensure(total == supply, || {
        format!("balances sum to {total}, supply is {supply}")
    })?;
    let burned = sum(s.slash_records().iter().map(|r| r.outcome.burned), "burned")?;
    ensure(initial_supply.checked_sub(supply) == Some(burned), || {
        format!("supply fell from {initial_supply} to {supply}, slashes burned {burned}")
    })
}

/// The bonded pool holds every validator and provider bond, the unbonding pool every queued
/// entry.
fn stakes<S: StateRead>(s: &S) -> Result<(), String> {
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
fn leases<S: StateRead>(s: &S) -> Result<(), String> {
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
        let Some((_, id)) = gpuchain_auction::state_key::parse_queue_key(&key) else {
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

/// Every score, stored and decayed to `height`, lies in [0, 10^6].
fn reputation<S: StateRead>(s: &S, height: u64, providers: &[Address]) -> Result<(), String> {
    for p in providers {
        let stored = s.reputation(p).score_ppm;
        let now = s.score(p, height);
        ensure(stored <= PPM_ONE && now <= PPM_ONE, || {
            format!("reputation of {p} out of bounds: stored {stored}, now {now}")
        })?;
    }
    Ok(())
}

/// An unsettled verify case is about a lease that is not final yet (the module holds it),
/// and a case awaiting a verdict has an assignee.
fn verify_cases<S: StateRead>(s: &S) -> Result<(), String> {
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

/// Liveness: every order is closed, every lease final and escrow empty.
pub fn all_settled<S: StateRead>(s: &S) -> Result<(), String> {
    if let Some(o) = s
        .orders()
        .iter()
        .find(|o| matches!(o.state, OrderState::Open | OrderState::Cleared))
    {
        return Err(format!("order {} is still {:?}", o.id, o.state));
    }
    if let Some(l) = s.leases().iter().find(|l| !l.state.is_final()) {
        return Err(format!("lease {} is still {:?}", l.id, l.state));
    }
    let held = s.balance(&gpuchain_auction::module_account::escrow());
    ensure(held == 0, || format!("escrow still holds {held}"))?;
    if let Some(c) = s.cases().iter().find(|c| c.stage != CaseStage::Closed) {
        return Err(format!("case {} is still {:?}", c.lease_id, c.stage));
    }
    let deposits = s.balance(&gpuchain_verify::module_account::verify_appeals());
    ensure(deposits == 0, || {
        format!("appeal deposits still hold {deposits}")
    })?;
    use gpuchain_serving::{ServingOrderState, ServingRead};
    if let Some(o) = s
        .serving_orders()
        .iter()
        .find(|o| o.state != ServingOrderState::Closed)
    {
        return Err(format!("serving order {} is still {:?}", o.id, o.state));
    }
    let serving = s.balance(&gpuchain_serving::module_account::serving_escrow());
    ensure(serving == 0, || {
        format!("serving escrow still holds {serving}")
    })
}
