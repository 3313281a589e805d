use gpuchain_bank::BankRead;
use gpuchain_types::{Address, Amount, StateRead, StateReadExt, StateWrite, StateWriteExt};

use crate::{
    module_account, state_key, Claim, ClaimWindow, ServingBid, ServingError, ServingLease,
    ServingOrder, ServingOrderState, ServingParams, Timer,
};

/// Typed serving reads.
pub trait ServingRead: StateRead {
    /// Parameters (defaults on a chain whose genesis predates the module).
    fn serving_params(&self) -> ServingParams {
        self.get(state_key::params()).unwrap_or_default()
    }

    /// What `provider` claimed in its current claim window (none yet: the default).
    fn serving_claim_window(&self, provider: &Address) -> ClaimWindow {
        self.get(&state_key::claim_window(provider))
            .unwrap_or_default()
    }

    /// Whether claim `id` is audited for sure (it went past its provider's claim window).
    fn serving_forced_audit(&self, id: u64) -> bool {
        self.get::<()>(&state_key::forced_audit(id)).is_some()
    }

    /// The serving models `verifier` declared it judges, sorted.
    fn serving_judged_models(&self, verifier: &Address) -> Vec<[u8; 32]> {
        self.get(&state_key::judged_models(verifier))
            .unwrap_or_default()
    }

    /// Whether `verifier` declared it judges the model whose weights hash to `model`.
    fn judges_model(&self, verifier: &Address, model: &[u8; 32]) -> bool {
        self.serving_judged_models(verifier)
            .binary_search(model)
            .is_ok()
    }

    /// Recusals on claim `id` by its appeal jury when `appeal`, else by its first jury.
    fn serving_recusals(&self, id: u64, appeal: bool) -> u32 {
        let (first, appealed): (u32, u32) = self.get(&state_key::recusals(id)).unwrap_or_default();
        if appeal {
            appealed
        } else {
            first
        }
    }

    /// One order.
    fn serving_order(&self, id: u64) -> Option<ServingOrder> {
        self.get(&state_key::order(id))
    }

    /// Every order in state, by id.
    fn serving_orders(&self) -> Vec<ServingOrder> {
        self.prefix(state_key::orders_prefix())
            .into_iter()
            .map(|(_, o)| o)
            .collect()
    }

    /// An order's bids, in provider order.
    fn serving_bids(&self, order_id: u64) -> Vec<ServingBid> {
        self.prefix(&state_key::bids_prefix(order_id))
            .into_iter()
            .map(|(_, b)| b)
            .collect()
    }

    /// One bid.
    fn serving_bid(&self, order_id: u64, provider: &Address) -> Option<ServingBid> {
        self.get(&state_key::bid(order_id, provider))
    }

    /// One lease.
    fn serving_lease(&self, id: u64) -> Option<ServingLease> {
        self.get(&state_key::lease(id))
    }

    /// Every lease in state, by id.
    fn serving_leases(&self) -> Vec<ServingLease> {
        self.prefix(state_key::leases_prefix())
            .into_iter()
            .map(|(_, l)| l)
            .collect()
    }

    /// A provider's leases still in state, by id.
    fn serving_leases_of(&self, provider: &Address) -> Vec<ServingLease> {
        self.prefix_raw(&state_key::leases_by_provider_prefix(provider))
            .into_iter()
            .filter_map(|(k, _)| state_key::indexed_lease_id(&k))
            .filter_map(|id| self.serving_lease(id))
            .collect()
    }

    /// One unsettled claim.
    fn serving_claim(&self, id: u64) -> Option<Claim> {
        self.get(&state_key::claim(id))
    }

    /// Every unsettled claim, by id.
    fn serving_claims(&self) -> Vec<Claim> {
        self.prefix(state_key::claims_prefix())
            .into_iter()
            .map(|(_, c)| c)
            .collect()
    }
}

impl<S: StateRead + ?Sized> ServingRead for S {}

/// Typed serving writes.
pub trait ServingWrite: StateWrite {
    /// Sets the parameters.
    fn put_serving_params(&mut self, params: &ServingParams) {
        self.put(state_key::params().to_string(), params);
    }

    /// Takes the next id of `kind`.
    fn next_serving_id(&mut self, kind: &str) -> Result<u64, ServingError> {
        let key = state_key::next_id(kind);
        let id: u64 = self.get(&key).unwrap_or(1);
        let next = id.checked_add(1).ok_or(ServingError::Overflow)?;
        self.put(key, &next);
        Ok(id)
    }

    /// Stores an order.
    fn put_serving_order(&mut self, order: &ServingOrder) {
        self.put(state_key::order(order.id), order);
    }

    /// Stores a bid.
    fn put_serving_bid(&mut self, bid: &ServingBid) {
        self.put(state_key::bid(bid.order_id, &bid.provider), bid);
    }

    /// Deletes an order's bids.
    fn delete_serving_bids(&mut self, order_id: u64) {
        for (key, _) in self.prefix_raw(&state_key::bids_prefix(order_id)) {
            self.delete(key);
        }
    }

    /// Stores a lease (and its provider index).
    fn put_serving_lease(&mut self, lease: &ServingLease) {
        self.put(state_key::lease(lease.id), lease);
        self.put(state_key::lease_by_provider(&lease.provider, lease.id), &());
    }

    /// Deletes a lease and its index entry.
    fn delete_serving_lease(&mut self, lease: &ServingLease) {
        self.delete(state_key::lease(lease.id));
        self.delete(state_key::lease_by_provider(&lease.provider, lease.id));
    }

    /// Stores what `provider` claimed in its current claim window.
    fn put_serving_claim_window(&mut self, provider: &Address, window: &ClaimWindow) {
        self.put(state_key::claim_window(provider), window);
    }

    /// Stores a claim.
    fn put_serving_claim(&mut self, claim: &Claim) {
        self.put(state_key::claim(claim.id), claim);
    }

    /// Stores the models `verifier` judges (`models` sorted; none deletes the entry).
    fn put_serving_judged_models(&mut self, verifier: &Address, models: &[[u8; 32]]) {
        let key = state_key::judged_models(verifier);
        if models.is_empty() {
            self.delete(key);
        } else {
            self.put(key, &models.to_vec());
        }
    }

    /// Marks claim `id` to be audited for sure.
    fn put_serving_forced_audit(&mut self, id: u64) {
        self.put(state_key::forced_audit(id), &());
    }

    /// Counts a recusal on claim `id` by its appeal jury when `appeal`, else by its first.
    fn add_serving_recusal(&mut self, id: u64, appeal: bool) -> Result<(), ServingError> {
        let mut counts: (u32, u32) = self.get(&state_key::recusals(id)).unwrap_or_default();
        let count = if appeal { &mut counts.1 } else { &mut counts.0 };
        *count = count.checked_add(1).ok_or(ServingError::Overflow)?;
        self.put(state_key::recusals(id), &counts);
        Ok(())
    }

    /// Deletes a settled claim (and its forced-audit mark and recusal count).
    fn delete_serving_claim(&mut self, id: u64) {
        self.delete(state_key::claim(id));
        self.delete(state_key::forced_audit(id));
        self.delete(state_key::recusals(id));
    }

    /// Deletes an order.
    fn delete_serving_order(&mut self, id: u64) {
        self.delete(state_key::order(id));
    }

    /// Runs `timer` in the end-block of `height`.
    fn set_serving_timer(&mut self, height: u64, timer: Timer) {
        let (kind, id) = timer.key_parts();
        self.put(state_key::timer(height, kind, id), &timer);
    }

    /// Cancels `timer` at `height`.
    fn cancel_serving_timer(&mut self, height: u64, timer: Timer) {
        let (kind, id) = timer.key_parts();
        self.delete(state_key::timer(height, kind, id));
    }
}

impl<S: StateWrite + ?Sized> ServingWrite for S {}

/// The module's accounting: `serving_escrow` holds exactly every open order's deposit plus
/// every open claim's amount, audit reserve and appeal deposit, and every lease's open-claim count matches
/// its claims.
pub fn check_invariants(state: &impl StateRead) -> Result<(), String> {
    let sum = |acc: Option<Amount>, v: Amount| acc.and_then(|a| a.checked_add(v));
    let deposits = state
        .serving_orders()
        .iter()
        .filter(|o| o.state != ServingOrderState::Closed)
        .map(|o| o.deposit)
        .fold(Some(0), sum);
    let claims = state.serving_claims();
    let held = claims
        .iter()
        .map(|c| {
            c.amount
                .checked_add(c.audit_reserve)
                .and_then(|a| a.checked_add(c.appeal_deposit()))
        })
        .try_fold(0u128, |a, v| v.and_then(|v| a.checked_add(v)));
    let expected = deposits
        .zip(held)
        .and_then(|(d, h)| d.checked_add(h))
        .ok_or("serving escrow sum overflows")?;
    let balance = state.balance(&module_account::serving_escrow());
    if balance != expected {
        return Err(format!(
            "serving escrow holds {balance} ugpu but deposits, open claims and appeals sum to \
             {expected}"
        ));
    }
    for lease in state.serving_leases() {
        let open = claims.iter().filter(|c| c.lease_id == lease.id).count();
        if u32::try_from(open).ok() != Some(lease.open_claims) {
            return Err(format!(
                "serving lease {} counts {} open claims but {open} exist",
                lease.id, lease.open_claims
            ));
        }
    }
    for order in state.serving_orders() {
        if order.state == ServingOrderState::Closed && order.deposit != 0 {
            return Err(format!("closed serving order {} keeps a deposit", order.id));
        }
    }
    let declared: Vec<(String, Vec<[u8; 32]>)> = state.prefix(state_key::judged_models_prefix());
    for (key, models) in declared {
        let sorted_once = models.windows(2).all(|w| w.first() < w.get(1));
        if models.is_empty() || models.len() > crate::MAX_JUDGED_MODELS || !sorted_once {
            return Err(format!(
                "{key} holds {} models, not 1 to {} distinct ones in order",
                models.len(),
                crate::MAX_JUDGED_MODELS
            ));
        }
    }
    Ok(())
}
