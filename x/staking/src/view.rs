use gpuchain_bank::BankWrite;
use gpuchain_types::{Address, Amount, StateRead, StateReadExt, StateWrite, StateWriteExt};

use crate::{
    module_account, state_key, ActiveValidator, ConsensusAddress, Provider, ProviderFilter,
    StakingError, StakingParams, UnbondingCompletedEvent, UnbondingEntry, UnbondingKind,
    UnbondingStartedEvent, Validator,
};

/// Typed staking reads. The auction module uses [`StakingRead::provider`] and
/// [`StakingRead::is_eligible_provider`]; slashing uses the validator lookups.
pub trait StakingRead: StateRead {
    /// Module parameters.
    fn staking_params(&self) -> StakingParams {
        self.get(state_key::params()).unwrap_or_default()
    }

    /// The validator operated by `operator`.
    fn validator(&self, operator: &Address) -> Option<Validator> {
        self.get(&state_key::validator(operator))
    }

    /// The validator with CometBFT address `address`.
    fn validator_by_consensus_address(&self, address: &ConsensusAddress) -> Option<Validator> {
        let operator: Address = self.get(&state_key::validator_by_consensus(address))?;
        self.validator(&operator)
    }

    /// Every validator, in operator order.
    fn validators(&self) -> Vec<Validator> {
        self.prefix(state_key::validators_prefix())
            .into_iter()
            .map(|(_, v)| v)
            .collect()
    }

    /// The active set last reported to CometBFT, in consensus-address order.
    fn active_set(&self) -> Vec<ActiveValidator> {
        self.prefix(state_key::active_prefix())
            .into_iter()
            .map(|(_, v)| v)
            .collect()
    }

    /// The provider registered by `operator`.
    fn provider(&self, operator: &Address) -> Option<Provider> {
        self.get(&state_key::provider(operator))
    }

    /// Every provider, in operator order.
    fn providers(&self) -> Vec<Provider> {
        self.prefix(state_key::providers_prefix())
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }

    /// Providers that pass `filter`, in operator order.
    fn providers_matching(&self, filter: &ProviderFilter) -> Vec<Provider> {
        self.providers()
            .into_iter()
            .filter(|p| filter.matches(p))
            .collect()
    }

    /// Leases the provider is serving now.
    fn open_leases(&self, provider: &Address) -> u64 {
        self.get(&state_key::open_leases(provider)).unwrap_or(0)
    }

    /// Whether `operator` may bid at `height`: registered, bonded at least
    /// `min_provider_stake`, and not jailed.
    fn is_eligible_provider(&self, operator: &Address, height: u64) -> bool {
        let min = self.staking_params().min_provider_stake;
        self.provider(operator)
            .is_some_and(|p| p.bonded >= min && !p.is_jailed(height))
    }

    /// The whole unbonding queue, earliest completion first.
    fn unbonding_entries(&self) -> Vec<UnbondingEntry> {
        self.prefix(state_key::unbonding_prefix())
            .into_iter()
            .map(|(_, e)| e)
            .collect()
    }

    /// `owner`'s unbonding entries, by id.
    fn unbonding_entries_of(&self, owner: &Address) -> Vec<UnbondingEntry> {
        self.prefix::<u64>(&state_key::unbonding_by_owner_prefix(owner))
            .into_iter()
            .filter_map(|(key, completion)| {
                let id = key.rsplit('/').next()?.parse::<u64>().ok()?;
                self.get(&state_key::unbonding(completion, id))
            })
            .collect()
    }
}

impl<S: StateRead + ?Sized> StakingRead for S {}

/// Typed staking writes. Methods that move funds either apply fully or change nothing.
pub trait StakingWrite: StateWrite {
    /// Stores the module parameters.
    fn put_staking_params(&mut self, params: &StakingParams) {
        self.put(state_key::params().to_string(), params);
    }

    /// Stores a validator and its consensus-address index.
    fn put_validator(&mut self, validator: &Validator) {
        self.put(state_key::validator(&validator.operator), validator);
        self.put(
            state_key::validator_by_consensus(&validator.consensus_address),
            &validator.operator,
        );
    }

    /// Replaces the stored active set.
    fn put_active_set(&mut self, set: &[(ConsensusAddress, ActiveValidator)]) {
        for (address, _) in self.prefix::<ActiveValidator>(state_key::active_prefix()) {
            self.delete(address);
        }
        for (address, member) in set {
            self.put(state_key::active(address), member);
        }
    }

    /// Stores a provider.
    fn put_provider(&mut self, provider: &Provider) {
        self.put(state_key::provider(&provider.operator), provider);
    }

    /// Removes a provider's registration.
    fn delete_provider(&mut self, operator: &Address) {
        self.delete(state_key::provider(operator));
        self.delete(state_key::open_leases(operator));
    }

    /// Counts a newly opened lease of `provider` (called by the auction module); returns
    /// the new count.
    fn increment_open_leases(&mut self, provider: &Address) -> Result<u64, StakingError> {
        if self.provider(provider).is_none() {
            return Err(StakingError::NotAProvider(*provider));
        }
        let count = self
            .open_leases(provider)
            .checked_add(1)
            .ok_or(StakingError::Overflow)?;
        self.put(state_key::open_leases(provider), &count);
        Ok(count)
    }

    /// Counts a closed lease of `provider` (called by the auction module); returns the new
    /// count.
    fn decrement_open_leases(&mut self, provider: &Address) -> Result<u64, StakingError> {
        let count = self
            .open_leases(provider)
            .checked_sub(1)
            .ok_or(StakingError::NoOpenLeases(*provider))?;
        let key = state_key::open_leases(provider);
        if count == 0 {
            self.delete(key);
        } else {
            self.put(key, &count);
        }
        Ok(count)
    }

    /// Moves `amount` from the bonded to the unbonding pool and queues its release to
    /// `owner` at `height + unbonding_blocks`. The caller lowers the bond record.
    fn begin_unbonding(
        &mut self,
        owner: &Address,
        kind: UnbondingKind,
        amount: Amount,
        height: u64,
    ) -> Result<UnbondingEntry, StakingError> {
        let blocks = self.staking_params().unbonding_blocks;
        let completion_height = height.checked_add(blocks).ok_or(StakingError::Overflow)?;
        let id: u64 = self.get(state_key::next_unbonding_id()).unwrap_or(0);
        let next_id = id.checked_add(1).ok_or(StakingError::Overflow)?;
        self.transfer(
            &module_account::bonded_pool(),
            &module_account::unbonding_pool(),
            amount,
        )?;
        let entry = UnbondingEntry {
            id,
            owner: *owner,
            kind,
            amount,
            creation_height: height,
            completion_height,
        };
        self.put(state_key::next_unbonding_id().to_string(), &next_id);
        self.put(state_key::unbonding(completion_height, id), &entry);
        self.put(state_key::unbonding_by_owner(owner, id), &completion_height);
        self.emit(UnbondingStartedEvent::from(&entry).into());
        Ok(entry)
    }

    /// Lowers a queued entry to `amount` (a slash of stake that was unbonding when the
    /// offence happened); 0 removes it. The caller burns the difference from the unbonding
    /// pool.
    fn set_unbonding_amount(&mut self, entry: &UnbondingEntry, amount: Amount) {
        let key = state_key::unbonding(entry.completion_height, entry.id);
        if amount == 0 {
            self.delete(key);
            self.delete(state_key::unbonding_by_owner(&entry.owner, entry.id));
        } else {
            self.put(
                key,
                &UnbondingEntry {
                    amount,
                    ..entry.clone()
                },
            );
        }
    }

    /// Pays out every entry whose completion height is at most `height`, in queue order.
    fn release_matured_unbondings(
        &mut self,
        height: u64,
    ) -> Result<Vec<UnbondingEntry>, StakingError> {
        let matured: Vec<(String, UnbondingEntry)> = self
            .due_by::<UnbondingEntry>(state_key::unbonding_prefix(), height)
            .into_iter()
            .take_while(|(_, e)| e.completion_height <= height)
            .collect();
        let mut released = Vec::with_capacity(matured.len());
        for (key, entry) in matured {
            self.transfer(
                &module_account::unbonding_pool(),
                &entry.owner,
                entry.amount,
            )?;
            self.delete(key);
            self.delete(state_key::unbonding_by_owner(&entry.owner, entry.id));
            self.emit(UnbondingCompletedEvent::from(&entry).into());
            released.push(entry);
        }
        Ok(released)
    }
}

impl<S: StateWrite + ?Sized> StakingWrite for S {}
