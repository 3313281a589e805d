//! Invariants computed from committed state after every block: every module's, as the app's
//! module table lists them, and those only a simulation can check, knowing the supply at
//! genesis and every account that was a provider. Each returns the number of checks it
//! made, or what is broken.

use gpuchain_auction::{AuctionRead, OrderState};
use gpuchain_bank::BankRead;
use gpuchain_chain::app::invariants::{ensure, sum};
use gpuchain_reputation::ReputationRead;
use gpuchain_slashing::SlashingRead;
use gpuchain_types::{Address, StateRead, PPM_ONE};
use gpuchain_verify::{CaseStage, VerifyRead};

/// Every safety invariant; `initial_supply` is the supply at genesis, `providers` every
/// account that ever was a provider.
pub fn check_all(
    s: &gpuchain_chain::Store,
    height: u64,
    initial_supply: u128,
    providers: &[Address],
) -> Result<u64, String> {
    supply(s, initial_supply)?;
    reputation(s, height, providers)?;
    let modules = gpuchain_chain::app::check_invariants(s)?;
    Ok(modules.saturating_add(2))
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
