use gpuchain_types::{Address, Amount, Ppm, StateRead, StateReadExt, StateWrite, StateWriteExt};

use crate::{
    apply, decay, state_key, HistoryEntry, Outcome, Reputation, ReputationChangedEvent,
    ReputationError, ReputationParams,
};

/// Typed reputation reads.
pub trait ReputationRead: StateRead {
    /// Module parameters.
    fn reputation_params(&self) -> ReputationParams {
        self.get(state_key::params()).unwrap_or_default()
    }

    /// The stored record (neutral default when none).
    fn reputation(&self, provider: &Address) -> Reputation {
        self.get(&state_key::record(provider)).unwrap_or_default()
    }

    /// The score at `height`, decayed from the stored one.
    fn score(&self, provider: &Address, height: u64) -> Ppm {
        let r = self.reputation(provider);
        let blocks = height.saturating_sub(r.updated_height);
        decay(
            r.score_ppm,
            blocks,
            self.reputation_params().half_life_blocks,
        )
    }

    /// The kept history of `provider`, oldest first.
    fn reputation_history(&self, provider: &Address) -> Vec<HistoryEntry> {
        self.prefix(&state_key::history_prefix(provider))
            .into_iter()
            .map(|(_, e)| e)
            .collect()
    }
}

impl<S: StateRead + ?Sized> ReputationRead for S {}

/// Typed reputation writes.
pub trait ReputationWrite: StateWrite {
    /// Stores the module parameters.
    fn put_reputation_params(&mut self, params: &ReputationParams) {
        self.put(state_key::params().to_string(), params);
    }

    /// Records `outcome` for `provider` at `height` about work priced `value` ugpu: decays,
    /// applies the step (a good outcome's in proportion to `value`, see
    /// [`ReputationParams::for_value`]), stores the record and a history entry (dropping the
    /// oldest beyond `max_history`), emits an event.
    fn record_outcome(
        &mut self,
        provider: &Address,
        height: u64,
        outcome: Outcome,
        value: Amount,
    ) -> Result<HistoryEntry, ReputationError> {
        let params = self.reputation_params();
        let mut r = self.reputation(provider);
        let before = self.score(provider, height);
        let after = apply(before, outcome, &params.for_value(value));
        let bump = |n: u64| n.checked_add(1).ok_or(ReputationError::Overflow);
        match outcome {
            Outcome::Accepted => r.accepted = bump(r.accepted)?,
            Outcome::ChallengePassed => r.challenges_passed = bump(r.challenges_passed)?,
            Outcome::Fault => r.faults = bump(r.faults)?,
            Outcome::MissedDeadline => r.missed = bump(r.missed)?,
        }
        if outcome.is_bad() {
            r.last_bad_height = Some(height);
        }
        let seq = r.next_seq;
        r.next_seq = bump(seq)?;
        r.score_ppm = after;
        r.updated_height = height;
        let entry = HistoryEntry {
            seq,
            height,
            outcome,
            before_ppm: before,
            after_ppm: after,
        };
        self.put(state_key::record(provider), &r);
        self.put(state_key::history(provider, seq), &entry);
        if let Some(old) = seq.checked_sub(params.max_history) {
            self.delete(state_key::history(provider, old));
        }
        self.emit(
            ReputationChangedEvent {
                provider: *provider,
                entry: entry.clone(),
            }
            .into(),
        );
        Ok(entry)
    }
}

impl<S: StateWrite + ?Sized> ReputationWrite for S {}
