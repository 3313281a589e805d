use gpuchain_staking::ConsensusAddress;
use gpuchain_types::{Address, StateRead, StateReadExt, StateWrite, StateWriteExt};

use crate::{state_key, SigningInfo, SlashRecord, SlashingError, SlashingParams};

/// Typed slashing reads.
pub trait SlashingRead: StateRead {
    /// Module parameters.
    fn slashing_params(&self) -> SlashingParams {
        self.get(state_key::params()).unwrap_or_default()
    }

    /// Liveness ring of a validator, if it has one.
    fn signing_info(&self, address: &ConsensusAddress) -> Option<SigningInfo> {
        self.get(&state_key::signing_info(address))
    }

    /// One slash record.
    fn slash_record(&self, id: u64) -> Option<SlashRecord> {
        self.get(&state_key::record(id))
    }

    /// Every slash record, oldest first.
    fn slash_records(&self) -> Vec<SlashRecord> {
        self.prefix(state_key::records_prefix())
            .into_iter()
            .map(|(_, r)| r)
            .collect()
    }

    /// Slashes of one validator or provider operator, oldest first.
    fn slash_records_of(&self, subject: &Address) -> Vec<SlashRecord> {
        self.prefix::<u64>(&state_key::records_by_subject_prefix(subject))
            .into_iter()
            .filter_map(|(_, id)| self.slash_record(id))
            .collect()
    }
}

impl<S: StateRead + ?Sized> SlashingRead for S {}

/// Typed slashing writes.
pub trait SlashingWrite: StateWrite {
    /// Stores the module parameters.
    fn put_slashing_params(&mut self, params: &SlashingParams) {
        self.put(state_key::params().to_string(), params);
    }

    /// Stores a validator's liveness ring.
    fn put_signing_info(&mut self, address: &ConsensusAddress, info: &SigningInfo) {
        self.put(state_key::signing_info(address), info);
    }

    /// Stores `record` under the next id (which it fills in) and indexes it by subject.
    fn add_slash_record(&mut self, mut record: SlashRecord) -> Result<SlashRecord, SlashingError> {
        let id: u64 = self.get(state_key::next_record_id()).unwrap_or(0);
        let next = id.checked_add(1).ok_or(SlashingError::Overflow)?;
        record.id = id;
        self.put(state_key::next_record_id().to_string(), &next);
        self.put(state_key::record(id), &record);
        self.put(state_key::record_by_subject(&record.subject, id), &id);
        Ok(record)
    }
}

impl<S: StateWrite + ?Sized> SlashingWrite for S {}
