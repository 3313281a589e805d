use gpuchain_bank::{BankRead, BankWrite};
use gpuchain_types::{Address, Amount, StateRead, StateReadExt, StateWrite, StateWriteExt};

use crate::{
    module_account, state_key, Case, CaseStage, Challenge, OwedFee, Verifier,
    VerifierUnbondedEvent, VerifierUnbonding, VerifierUnbondingEvent, VerifyError, VerifyParams,
};

/// Typed verify reads (the module's queries).
pub trait VerifyRead: StateRead {
    /// Module parameters.
    fn verify_params(&self) -> VerifyParams {
        self.get(state_key::params()).unwrap_or_default()
    }

    /// One verifier.
    fn verifier(&self, operator: &Address) -> Option<Verifier> {
        self.get(&state_key::verifier(operator))
    }

    /// Every verifier, in address order.
    fn verifiers(&self) -> Vec<Verifier> {
        self.prefix(state_key::verifiers_prefix())
            .into_iter()
            .map(|(_, v)| v)
            .collect()
    }

    /// Verifiers that may be drawn at `height`, in address order.
    fn eligible_verifiers(&self, height: u64) -> Vec<Verifier> {
        let min = self.verify_params().min_verifier_stake;
        self.verifiers()
            .into_iter()
            .filter(|v| v.is_eligible(min, height))
            .collect()
    }

    /// The case of a lease.
    fn case(&self, lease_id: u64) -> Option<Case> {
        self.get(&state_key::case(lease_id))
    }

    /// Every case, by lease id.
    fn cases(&self) -> Vec<Case> {
        self.prefix(state_key::cases_prefix())
            .into_iter()
            .map(|(_, c)| c)
            .collect()
    }

    /// One open challenge.
    fn challenge(&self, id: u64) -> Option<Challenge> {
        self.get(&state_key::challenge(id))
    }

    /// Every open challenge, by id.
    fn challenges(&self) -> Vec<Challenge> {
        self.prefix(state_key::challenges_prefix())
            .into_iter()
            .map(|(_, c)| c)
            .collect()
    }

    /// Audit fees the pool still owes, oldest first.
    fn owed_fees(&self) -> Vec<OwedFee> {
        self.prefix(state_key::owed_fees_prefix())
            .into_iter()
            .map(|(_, f)| f)
            .collect()
    }

    /// What the pool paid verifiers at `height` so far.
    fn pool_outflow_at(&self, height: u64) -> Amount {
        match self.get::<(u64, Amount)>(state_key::pool_outflow()) {
            Some((h, paid)) if h == height => paid,
            _ => 0,
        }
    }

    /// The challenge an order was already the subject of.
    fn challenged_by(&self, order_id: u64) -> Option<u64> {
        self.get(&state_key::challenged_order(order_id))
    }

    /// Every queued unbonding, by completion height.
    fn verifier_unbondings(&self) -> Vec<VerifierUnbonding> {
        self.prefix(state_key::unbonding_prefix())
            .into_iter()
            .map(|(_, u)| u)
            .collect()
    }
}

impl<S: StateRead + ?Sized> VerifyRead for S {}

/// Typed verify writes.
pub trait VerifyWrite: StateWrite {
    /// Stores the module parameters.
    fn put_verify_params(&mut self, params: &VerifyParams) {
        self.put(state_key::params().to_string(), params);
    }

    /// Records what the pool paid verifiers at `height` so far.
    fn put_pool_outflow(&mut self, height: u64, paid: Amount) {
        self.put(state_key::pool_outflow().to_string(), &(height, paid));
    }

    /// Stores an owed fee (0 deletes it).
    fn put_owed_fee(&mut self, fee: &OwedFee) {
        let key = state_key::owed_fee(fee.id);
        if fee.amount == 0 {
            self.delete(key);
        } else {
            self.put(key, fee);
        }
    }

    /// Stores a verifier.
    fn put_verifier(&mut self, verifier: &Verifier) {
        self.put(state_key::verifier(&verifier.operator), verifier);
    }

    /// Stores a case.
    fn put_case(&mut self, case: &Case) {
        self.put(state_key::case(case.lease_id), case);
    }

    /// Sets the case timer of `lease_id` at `height`.
    fn set_case_timer(&mut self, height: u64, lease_id: u64) {
        self.put(state_key::case_timer(height, lease_id), &());
    }

    /// Takes the next id from the counter at `key`.
    fn take_verify_id(&mut self, key: &str) -> Result<u64, VerifyError> {
        let id: u64 = self.get(key).unwrap_or(0);
        let next = id.checked_add(1).ok_or(VerifyError::Overflow)?;
        self.put(key.to_string(), &next);
        Ok(id)
    }

    /// Stores a new challenge and its expiry.
    fn put_challenge(&mut self, challenge: &Challenge) {
        self.put(state_key::challenge(challenge.id), challenge);
        self.put(
            state_key::challenge_expiry(challenge.expires_height, challenge.id),
            &(),
        );
    }

    /// Removes a challenge and its expiry entry.
    fn delete_challenge(&mut self, challenge: &Challenge) {
        self.delete(state_key::challenge(challenge.id));
        self.delete(state_key::challenge_expiry(
            challenge.expires_height,
            challenge.id,
        ));
    }

    /// Marks `order_id` as the subject of `challenge_id`.
    fn mark_challenged(&mut self, order_id: u64, challenge_id: u64) {
        self.put(state_key::challenged_order(order_id), &challenge_id);
    }

    /// Moves `amount` from the bonded to the unbonding account and queues its release to
    /// `owner` at `height + verifier_unbonding_blocks`. The caller lowers the bond.
    fn begin_verifier_unbonding(
        &mut self,
        owner: &Address,
        amount: Amount,
        height: u64,
    ) -> Result<VerifierUnbonding, VerifyError> {
        let blocks = self.verify_params().verifier_unbonding_blocks;
        let completion_height = height.checked_add(blocks).ok_or(VerifyError::Overflow)?;
        let id = self.take_verify_id(state_key::next_unbonding_id())?;
        self.transfer(
            &module_account::verify_bonded(),
            &module_account::verify_unbonding(),
            amount,
        )?;
        let entry = VerifierUnbonding {
            id,
            owner: *owner,
            amount,
            completion_height,
        };
        self.put(state_key::unbonding(completion_height, id), &entry);
        self.emit(
            VerifierUnbondingEvent {
                verifier: *owner,
                amount,
                completion_height,
            }
            .into(),
        );
        Ok(entry)
    }

    /// Pays out every unbonding whose completion height is at most `height`.
    fn release_matured_verifier_unbondings(&mut self, height: u64) -> Result<(), VerifyError> {
        let matured: Vec<(String, VerifierUnbonding)> = self
            .due_by::<VerifierUnbonding>(state_key::unbonding_prefix(), height)
            .into_iter()
            .take_while(|(_, e)| e.completion_height <= height)
            .collect();
        for (key, entry) in matured {
            self.transfer(
                &module_account::verify_unbonding(),
                &entry.owner,
                entry.amount,
            )?;
            self.delete(key);
            self.emit(
                VerifierUnbondedEvent {
                    verifier: entry.owner,
                    amount: entry.amount,
                }
                .into(),
            );
        }
        Ok(())
    }
}

impl<S: StateWrite + ?Sized> VerifyWrite for S {}

/// Checks the module's accounting: `verify_bonded` holds the sum of bonds,
/// `verify_unbonding` the queued unbondings and `verify_appeals` the open deposits; each
/// verifier's `open_challenges` counts its unrevealed challenges; an owed fee is deleted once
/// paid. For tests and
/// simulations, not for an on-chain check.
pub fn check_invariants(state: &impl StateRead) -> Result<(), String> {
    if let Some(f) = state.owed_fees().iter().find(|f| f.amount == 0) {
        return Err(format!("owed fee {} is kept at zero", f.id));
    }
    let challenges = state.challenges();
    for v in state.verifiers() {
        let open = challenges
            .iter()
            .filter(|c| c.verifier == v.operator)
            .count() as u64;
        if u64::from(v.open_challenges) != open {
            return Err(format!(
                "verifier {} counts {} open challenges, state holds {open}",
                v.operator, v.open_challenges
            ));
        }
    }
    let sum = |xs: Vec<Amount>| {
        xs.into_iter()
            .try_fold(0u128, |a, x| a.checked_add(x))
            .ok_or_else(|| "overflow".to_string())
    };
    let bonds = sum(state.verifiers().iter().map(|v| v.bonded).collect())?;
    let unbonding = sum(state
        .verifier_unbondings()
        .iter()
        .map(|u| u.amount)
        .collect())?;
    let deposits = sum(state
        .cases()
        .iter()
        .filter(|c| c.stage != CaseStage::Closed)
        .map(|c| c.deposit)
        .collect())?;
    for (name, account, expected) in [
        ("verify_bonded", module_account::verify_bonded(), bonds),
        (
            "verify_unbonding",
            module_account::verify_unbonding(),
            unbonding,
        ),
        ("verify_appeals", module_account::verify_appeals(), deposits),
    ] {
        let held = state.balance(&account);
        if held != expected {
            return Err(format!(
                "{name} holds {held} ugpu, expected {expected} ugpu"
            ));
        }
    }
    Ok(())
}
