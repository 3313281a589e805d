use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_types::{Ppm, PPM_ONE};
use serde::{Deserialize, Serialize};

use crate::{FaultKind, SlashingError};

/// Largest `signed_blocks_window` (bounds the per-validator ring to 1,250 bytes).
pub const MAX_SIGNED_BLOCKS_WINDOW: u64 = 10_000;

/// Slashing parameters.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlashingParams {
    /// Blocks over which liveness is measured.
    pub signed_blocks_window: u64,
    /// Missing more than this many blocks in the window jails.
    pub max_missed_blocks: u64,
    /// Blocks a downtime jail lasts before unjail is possible.
    pub jail_blocks: u64,
    /// Share of the bond burned for downtime.
    pub downtime_slash_ppm: Ppm,
    /// Share of the bond burned for double-signing.
    pub double_sign_slash_ppm: Ppm,
    /// Share of a provider's bond taken for a proven wrong result.
    pub wrong_result_slash_ppm: Ppm,
    /// Share taken for a missed deadline.
    pub missed_deadline_slash_ppm: Ppm,
    /// Share taken for an abandoned lease.
    pub abandoned_lease_slash_ppm: Ppm,
    /// Share of a wrong result's slash refunded to the harmed client (other faults' share is
    /// burned: a client could cause them).
    pub client_share_ppm: Ppm,
    /// Share of a provider slash paid to the prover (burned when there is none).
    pub prover_share_ppm: Ppm,
    /// Blocks a slashed provider may not bid.
    pub provider_jail_blocks: u64,
}

impl Default for SlashingParams {
    fn default() -> Self {
        SlashingParams {
            signed_blocks_window: 100,
            max_missed_blocks: 50,
            jail_blocks: 50,
            downtime_slash_ppm: 1_000,
            double_sign_slash_ppm: 50_000,
            wrong_result_slash_ppm: 300_000,
            missed_deadline_slash_ppm: 50_000,
            abandoned_lease_slash_ppm: 20_000,
            client_share_ppm: 500_000,
            prover_share_ppm: 300_000,
            provider_jail_blocks: 1_000,
        }
    }
}

impl SlashingParams {
    /// The slash fraction of a provider fault.
    pub fn fault_slash_ppm(&self, fault: FaultKind) -> Ppm {
        match fault {
            FaultKind::WrongResult | FaultKind::ExitAfterReveal => self.wrong_result_slash_ppm,
            FaultKind::MissedDeadline => self.missed_deadline_slash_ppm,
            FaultKind::AbandonedLease => self.abandoned_lease_slash_ppm,
        }
    }

    /// Rejects parameters the module cannot run with.
    pub fn validate(&self) -> Result<(), SlashingError> {
        let bad = |what: &str| Err(SlashingError::InvalidParams(what.to_string()));
        if self.signed_blocks_window == 0 || self.signed_blocks_window > MAX_SIGNED_BLOCKS_WINDOW {
            return bad("signed_blocks_window must be 1..=10000");
        }
        if self.max_missed_blocks >= self.signed_blocks_window {
            return bad("max_missed_blocks must be below signed_blocks_window");
        }
        let ppms = [
            self.downtime_slash_ppm,
            self.double_sign_slash_ppm,
            self.wrong_result_slash_ppm,
            self.missed_deadline_slash_ppm,
            self.abandoned_lease_slash_ppm,
        ];
        if ppms.iter().any(|p| *p > PPM_ONE) {
            return bad("slash fractions must be at most 1000000 ppm");
        }
        if self
            .client_share_ppm
            .checked_add(self.prover_share_ppm)
            .is_none_or(|s| s > PPM_ONE)
        {
            return bad("client_share_ppm + prover_share_ppm must be at most 1000000");
        }
        Ok(())
    }
}
