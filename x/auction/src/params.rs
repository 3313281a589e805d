use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_types::{Amount, Ppm, MAX_RETENTION_SECS, PPM_ONE};
use serde::{Deserialize, Serialize};

use crate::AuctionError;

/// Most replicas an order may ask for.
pub const MAX_REPLICAS: u32 = 5;

/// Auction, escrow, verification and distribution parameters.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuctionParams {
    /// Longest bid window an order may set.
    pub max_bid_window_blocks: u64,
    /// Longest execution deadline an order may set.
    pub max_exec_deadline_blocks: u64,
    /// Most bids one order takes.
    pub max_bids_per_order: u32,
    /// Highest per-replica max price an order may set (bounds every product in ugpu).
    pub max_price_per_replica_limit: Amount,
    /// Verification fee: this ppm of the order value at max price (`k × max_price`), locked
    /// at posting, paid to the verification pool at clearing, refunded if the order never
    /// clears.
    pub verification_fee_ppm: Ppm,
    /// Network take rate on each payment, to the fee pool.
    pub take_rate_ppm: Ppm,
    /// Blocks after the commit deadline in which reveals are taken.
    pub reveal_window_blocks: u64,
    /// Blocks between acceptance and payment, in which a verdict may still fault a result.
    pub challenge_window_blocks: u64,
    /// Blocks the providers of replicas that revealed different bytes have to compare each
    /// other's outputs under the job's tolerance; silence past it disputes the order.
    pub compare_window_blocks: u64,
    /// Blocks a disputed or audited result waits for a verdict before the fallback (audit:
    /// accepted; dispute: refunded without slashing).
    pub verdict_window_blocks: u64,
    /// Audit probability of a lone result from a provider with score 1,000,000.
    pub audit_min_ppm: Ppm,
    /// Audit probability of a lone result from a provider with score 0.
    pub audit_max_ppm: Ppm,
    /// Deterrence: whatever the reputation, a result is audited with at least the
    /// probability `q` for which `q × (price + penalty) ≥ price × audit_deterrence_ppm / 10^6`,
    /// `penalty` being the wrong-result slash the provider's bond covers per open lease. At
    /// 1,500,000 a provider that saves the whole price by not computing still loses half
    /// the price in expectation. 0 turns the floor off.
    pub audit_deterrence_ppm: Ppm,
    /// The audit fee: this ppm of the lease price, paid to the verifier whose verdict
    /// stands. An honest verdict is paid from the verification pool, which every judged
    /// lease funds with its verification charge (its audit probability times this fee,
    /// the whole fee for a disputed lease); a faulty verdict is paid out of the slash.
    pub audit_fee_ppm: Ppm,
    /// The availability fee: this ppm of the lease price, paid to the verifier that checks
    /// an unfetched lease's output can be fetched before it is paid; the lease pays it back
    /// to the verification pool out of its price.
    pub availability_fee_ppm: Ppm,
    /// Seconds of block time a closed order (settled, cancelled or expired) and its bids and
    /// leases stay in state before they are deleted; 0 keeps them forever. Counted in time,
    /// not blocks, so that the live state a load leaves does not grow when blocks slow down.
    /// Their history stays provable at earlier heights on nodes that keep old versions.
    pub retention_secs: u64,
    /// Share of the fee pool paid to validators each block (pro rata to power).
    pub validators_share_ppm: Ppm,
    /// Share of the fee pool paid to the community pool; the verification pool gets the rest.
    pub community_share_ppm: Ppm,
    /// Loyalty bonus: this ppm of the price, paid out of the payment's take, to providers
    /// with a clean record.
    pub loyalty_bonus_ppm: Ppm,
    /// A clean record: registered, and no fault or missed deadline, for this many blocks.
    pub clean_service_blocks: u64,
    /// Longest free-text requirement (GPU model, region) in bytes.
    pub max_text_len: u32,
}

impl Default for AuctionParams {
    fn default() -> Self {
        AuctionParams {
            max_bid_window_blocks: 1_000,
            max_exec_deadline_blocks: 100_000,
            max_bids_per_order: 1_000,
            max_price_per_replica_limit: 1_000_000_000_000_000,
            verification_fee_ppm: 20_000,
            take_rate_ppm: 100_000,
            reveal_window_blocks: 20,
            challenge_window_blocks: 20,
            compare_window_blocks: 30,
            verdict_window_blocks: 100,
            audit_min_ppm: 60_000,
            audit_max_ppm: 300_000,
            audit_deterrence_ppm: 1_500_000,
            audit_fee_ppm: 1_000_000,
            availability_fee_ppm: 10_000,
            retention_secs: 86_400,
            validators_share_ppm: 500_000,
            community_share_ppm: 200_000,
            loyalty_bonus_ppm: 50_000,
            clean_service_blocks: 432_000,
            max_text_len: 64,
        }
    }
}

impl AuctionParams {
    /// Rejects parameters the module cannot run with.
    pub fn validate(&self) -> Result<(), AuctionError> {
        let bad = |what: &str| Err(AuctionError::InvalidParams(what.to_string()));
        if self.max_bid_window_blocks == 0 || self.max_exec_deadline_blocks == 0 {
            return bad("windows must be positive");
        }
        if self.max_bids_per_order == 0 || self.max_bids_per_order > 100_000 {
            return bad("max_bids_per_order must be 1..=100000");
        }
        if self.max_price_per_replica_limit == 0
            || self.max_price_per_replica_limit > 1_000_000_000_000_000_000_000
        {
            return bad("max_price_per_replica_limit must be 1..=10^24");
        }
        if self.retention_secs > MAX_RETENTION_SECS {
            return bad("retention_secs must be at most 3153600000 (100 years)");
        }
        if self.reveal_window_blocks == 0
            || self.verdict_window_blocks == 0
            || self.compare_window_blocks == 0
        {
            return bad("reveal, compare and verdict windows must be positive");
        }
        let ppms = [
            self.verification_fee_ppm,
            self.take_rate_ppm,
            self.audit_max_ppm,
            self.loyalty_bonus_ppm,
            self.audit_fee_ppm,
            self.availability_fee_ppm,
        ];
        if ppms.iter().any(|p| *p > PPM_ONE) || self.audit_min_ppm > self.audit_max_ppm {
            return bad("fractions must be at most 1000000 ppm, audit_min_ppm <= audit_max_ppm");
        }
        if self
            .validators_share_ppm
            .checked_add(self.community_share_ppm)
            .is_none_or(|s| s > PPM_ONE)
        {
            return bad("validators_share_ppm + community_share_ppm must be at most 1000000");
        }
        if self.audit_deterrence_ppm > 10 * PPM_ONE {
            return bad("audit_deterrence_ppm must be at most 10000000");
        }
        if self.max_text_len == 0 {
            return bad("max_text_len must be positive");
        }
        Ok(())
    }
}
