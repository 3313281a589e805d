//! What the agent remembers across restarts (`<data_dir>/state.json`): the last block it
//! processed, every bid it sent or is sending, every lease it won with the salt and result
//! it committed to, and its counters. A bid is recorded before its transaction is sent and a
//! salt before its commitment, so a restarted agent neither bids twice nor loses a reveal.

use std::collections::BTreeMap;

use gpuchain_types::Amount;
use serde::{Deserialize, Serialize};

/// Where a bid is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BidStatus {
    /// Recorded; the transaction may or may not have reached the chain.
    Submitting,
    /// On chain; capacity reserved until the auction clears.
    Placed,
    /// Won: a lease exists.
    Won,
    /// Lost or the order closed; capacity released.
    Lost,
    /// The bid transaction failed (reason logged).
    Failed,
}

/// One bid.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct BidRecord {
    pub(crate) order_id: u64,
    pub(crate) price: Amount,
    pub(crate) status: BidStatus,
    /// Height the order was posted at.
    pub(crate) order_height: u64,
    pub(crate) bid_end_height: u64,
    /// Height of the block that included the bid.
    pub(crate) bid_height: u64,
    /// Seconds spent fetching blobs before the bid.
    #[serde(default)]
    pub(crate) prefetch_seconds: f64,
}

impl BidRecord {
    /// Whether the bid holds a capacity slot.
    pub(crate) fn reserves(&self) -> bool {
        matches!(self.status, BidStatus::Submitting | BidStatus::Placed)
    }
}

/// Where a lease is, from the agent's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Stage {
    /// Won; the job has not finished.
    Won,
    /// The result is stored and served; salt and hash recorded; not committed yet.
    Executed,
    /// Commitment on chain.
    Committed,
    /// Result revealed; waiting for acceptance and payment.
    Revealed,
    /// Paid (final).
    Paid,
    /// The job could not be run (reason recorded); the lease cannot be honoured.
    Failed,
    /// Ended on chain without payment: faulted, missed or refunded (final).
    Lost,
}

impl Stage {
    /// Whether nothing more will happen.
    pub(crate) fn is_final(&self) -> bool {
        matches!(self, Stage::Paid | Stage::Lost)
    }

    /// Whether it still occupies a capacity slot.
    pub(crate) fn occupies(&self) -> bool {
        matches!(self, Stage::Won | Stage::Executed)
    }
}

/// One lease.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct LeaseRecord {
    pub(crate) lease_id: u64,
    pub(crate) order_id: u64,
    pub(crate) price: Amount,
    pub(crate) created_height: u64,
    pub(crate) deadline_height: u64,
    pub(crate) reveal_end_height: u64,
    pub(crate) stage: Stage,
    /// Hex result hash committed to.
    #[serde(default)]
    pub(crate) result_hash: Option<String>,
    /// Hex salt of the commitment.
    #[serde(default)]
    pub(crate) salt: Option<String>,
    /// The chain's last known lease state.
    #[serde(default)]
    pub(crate) chain_state: String,
    /// Why it failed or was lost.
    #[serde(default)]
    pub(crate) reason: Option<String>,
    /// Paid to us, ugpu.
    #[serde(default)]
    pub(crate) paid: Amount,
    /// How many times the agent started the job (more than 1 after a restart).
    #[serde(default)]
    pub(crate) attempts: u32,
    /// Failed commit or reveal transactions (retries stop after a few).
    #[serde(default)]
    pub(crate) tx_failures: u32,
    #[serde(default)]
    pub(crate) fetch_seconds: f64,
    #[serde(default)]
    pub(crate) execute_seconds: f64,
    #[serde(default)]
    pub(crate) committed_height: u64,
    #[serde(default)]
    pub(crate) revealed_height: u64,
    #[serde(default)]
    pub(crate) paid_height: u64,
    /// Height at which the agent appealed a faulty verdict on this lease.
    #[serde(default)]
    pub(crate) appealed_height: Option<u64>,
    /// Height at which the agent stated its comparison of the other replicas' outputs.
    #[serde(default)]
    pub(crate) compared_height: Option<u64>,
}

/// Running totals, exported as metrics.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Counters {
    pub(crate) bids: u64,
    pub(crate) bids_failed: u64,
    pub(crate) wins: u64,
    pub(crate) losses: u64,
    pub(crate) orders_skipped: u64,
    pub(crate) jobs_completed: u64,
    pub(crate) jobs_failed: u64,
    pub(crate) earnings: Amount,
}

/// The whole document.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct State {
    /// The provider's address (guards against a data dir reused with another key).
    #[serde(default)]
    pub(crate) provider: String,
    /// Last block fully processed.
    pub(crate) last_height: u64,
    pub(crate) bids: BTreeMap<u64, BidRecord>,
    pub(crate) leases: BTreeMap<u64, LeaseRecord>,
    pub(crate) counters: Counters,
    /// Hex hash of the last result produced (for the `stale` test mode).
    #[serde(default)]
    pub(crate) last_result: Option<String>,
}

impl State {
    /// Capacity slots in use: bids awaiting their auction plus leases not yet executed.
    pub(crate) fn slots_used(&self) -> u32 {
        let bids = self.bids.values().filter(|b| b.reserves()).count();
        let leases = self.leases.values().filter(|l| l.stage.occupies()).count();
        u32::try_from(bids + leases).unwrap_or(u32::MAX)
    }

    /// Leases not yet final.
    pub(crate) fn active_leases(&self) -> impl Iterator<Item = &LeaseRecord> {
        self.leases.values().filter(|l| !l.stage.is_final())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bid(status: BidStatus) -> BidRecord {
        BidRecord {
            order_id: 1,
            price: 5,
            status,
            order_height: 1,
            bid_end_height: 9,
            bid_height: 2,
            prefetch_seconds: 0.0,
        }
    }

    #[test]
    fn pending_bids_and_unexecuted_leases_hold_slots() {
        let mut s = State::default();
        s.bids.insert(1, bid(BidStatus::Placed));
        s.bids.insert(2, bid(BidStatus::Lost));
        s.bids.insert(3, bid(BidStatus::Submitting));
        assert_eq!(s.slots_used(), 2);
        s.bids.get_mut(&1).unwrap().status = BidStatus::Won;
        assert_eq!(s.slots_used(), 1);
    }
}
