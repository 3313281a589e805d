use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_types::{Amount, Ppm, MAX_RETENTION_SECS, PPM_ONE};
use serde::{Deserialize, Serialize};

use crate::ServingError;

/// Serving parameters.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServingParams {
    /// Most providers one order leases.
    pub max_providers: u32,
    /// Shortest lease, in blocks.
    pub min_duration_blocks: u64,
    /// Longest lease, in blocks.
    pub max_duration_blocks: u64,
    /// Longest bid window.
    pub max_bid_window_blocks: u64,
    /// Smallest deposit an order locks, ugpu.
    pub min_deposit: Amount,
    /// Blocks after a lease's last block in which acknowledged batches can still be claimed.
    pub claim_grace_blocks: u64,
    /// Chance that a claim is audited.
    pub audit_ppm: Ppm,
    /// An audited claim's fee to its verifiers: this share of the claim, at least
    /// `min_audit_fee`.
    pub audit_fee_ppm: Ppm,
    /// Least audit fee, ugpu.
    pub min_audit_fee: Amount,
    /// Chance that an `honest` first verdict gets a second verifier anyway.
    pub second_opinion_ppm: Ppm,
    /// Blocks the provider or client has to reveal an audited receipt.
    pub reveal_window_blocks: u64,
    /// Blocks a drawn verifier has to post its verdict.
    pub verdict_window_blocks: u64,
    /// Most verifier draws for one claim (including redraws after a missed deadline).
    pub max_jury_draws: u8,
    /// Blocks a reported provider has to show it is alive.
    pub report_window_blocks: u64,
    /// Largest request plus response revealed on chain, bytes (below `max_tx_bytes`, with
    /// room for the receipt and proof): an honest provider answers nothing larger.
    pub max_reveal_bytes: u64,
    /// Seconds of block time a closed order and its leases stay in state before they are
    /// deleted (0: at the next block), counted in time so that the live state a load leaves
    /// does not grow when blocks slow down. At most 100 years.
    pub retention_secs: u64,
    /// Blocks after a jury's verdict in which the party it goes against may appeal; the
    /// verdict applies when they pass. 0: verdicts apply at once and cannot be appealed.
    pub appeal_window_blocks: u64,
    /// What an appeal locks, ugpu: lost to the appeal jury if the verdict is upheld.
    pub appeal_deposit: Amount,
}

impl Default for ServingParams {
    fn default() -> Self {
        ServingParams {
            max_providers: 8,
            min_duration_blocks: 10,
            max_duration_blocks: 10_000_000,
            max_bid_window_blocks: 100,
            min_deposit: 1_000,
            claim_grace_blocks: 20,
            audit_ppm: 50_000,
            audit_fee_ppm: 20_000,
            min_audit_fee: 10_000,
            second_opinion_ppm: 100_000,
            reveal_window_blocks: 10,
            verdict_window_blocks: 10,
            max_jury_draws: 5,
            report_window_blocks: 10,
            max_reveal_bytes: 49_152,
            retention_secs: 3_600,
            appeal_window_blocks: 10,
            appeal_deposit: 10_000_000,
        }
    }
}

impl ServingParams {
    /// Rejects parameters the module cannot run with.
    pub fn validate(&self) -> Result<(), ServingError> {
        let bad = |what: &str| Err(ServingError::InvalidParams(what.to_string()));
        if self.max_providers == 0 || self.max_providers > 64 {
            return bad("max_providers must be 1..=64");
        }
        if self.min_duration_blocks == 0 || self.min_duration_blocks > self.max_duration_blocks {
            return bad("min_duration_blocks must be 1..=max_duration_blocks");
        }
        if self.max_bid_window_blocks == 0 {
            return bad("max_bid_window_blocks must be positive");
        }
        if self.min_deposit == 0 {
            return bad("min_deposit must be positive");
        }
        // Without audits nothing stops a provider from answering with anything.
        if self.audit_ppm == 0 || self.audit_ppm > PPM_ONE {
            return bad("audit_ppm must be 1..=1000000");
        }
        if self.audit_fee_ppm > PPM_ONE || self.second_opinion_ppm > PPM_ONE {
            return bad("audit_fee_ppm and second_opinion_ppm must be at most 1000000");
        }
        if self.reveal_window_blocks == 0
            || self.verdict_window_blocks == 0
            || self.report_window_blocks == 0
        {
            return bad("reveal, verdict and report windows must be positive");
        }
        if self.max_jury_draws < 3 {
            return bad("max_jury_draws must be at least 3 (two verdicts and a tie-break)");
        }
        if self.retention_secs > MAX_RETENTION_SECS {
            return bad("retention_secs must be at most 3153600000 (100 years)");
        }
        if self.max_reveal_bytes == 0 || self.max_reveal_bytes > 1 << 20 {
            return bad("max_reveal_bytes must be 1..=1048576");
        }
        // A free appeal would let the losing side delay every verdict and tie up two more
        // verifiers at no cost.
        if self.appeal_window_blocks > 0 && self.appeal_deposit == 0 {
            return bad("appeal_deposit must be positive when appeals are open");
        }
        Ok(())
    }
}
