//! What the agent remembers across restarts (`<data_dir>/state.json`): the last block it
//! processed, every assignment with its verdict, every ringer with its salt and expected
//! answer, and its counters. A verdict is recorded before its transaction is sent (a resent
//! verdict is refused by the chain, never counted twice), and a ringer's salt and expected
//! hash are recorded before its commitment, so a restart neither double-posts nor forgets a
//! pending reveal.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Where an assignment is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CaseStage {
    /// Assigned; re-execution not finished.
    Checking,
    /// Verdict decided and recorded; the transaction may or may not be on chain.
    Posting,
    /// Verdict on chain (final).
    Posted,
    /// Could not be checked or posted (reason recorded; final).
    Failed,
}

/// One assignment: a (lease, round).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct CaseRecord {
    pub(crate) lease_id: u64,
    pub(crate) round: u8,
    pub(crate) provider: String,
    pub(crate) deadline: u64,
    pub(crate) assigned_height: u64,
    pub(crate) stage: CaseStage,
    /// `honest` or `faulty`.
    #[serde(default)]
    pub(crate) verdict: Option<String>,
    /// Hex hash of the agent's own output.
    #[serde(default)]
    pub(crate) output_hash: Option<String>,
    /// Backend used.
    #[serde(default)]
    pub(crate) backend: String,
    /// What the comparison found, or why it failed.
    #[serde(default)]
    pub(crate) detail: String,
    #[serde(default)]
    pub(crate) fetch_seconds: f64,
    #[serde(default)]
    pub(crate) execute_seconds: f64,
    #[serde(default)]
    pub(crate) posted_height: u64,
}

impl CaseRecord {
    /// Key in [`State::cases`]: `<lease>/<round>`, zero-padded so the map is in lease order.
    pub(crate) fn key(lease_id: u64, round: u8) -> String {
        format!("{lease_id:020}/{round}")
    }
}

/// Where a ringer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RingerStage {
    /// Expected answer and salt recorded; the commitment may or may not be on chain.
    Committing,
    /// Commitment on chain (`challenge_id`).
    Committed,
    /// The order is being posted by the poster; it may or may not be on chain.
    Posting,
    /// The order is on chain (`order_id`); waiting for every lease to be judged.
    Posted,
    /// Revealed (final).
    Revealed,
    /// Given up (reason recorded; final): the order never cleared, a step failed.
    Abandoned,
}

/// One ringer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct RingerRecord {
    pub(crate) id: u64,
    pub(crate) stage: RingerStage,
    /// Poster key name and address.
    pub(crate) poster_key: String,
    pub(crate) poster: String,
    /// Hex expected output hash (the agent's canonical re-execution).
    pub(crate) expected: String,
    /// Hex salt.
    pub(crate) salt: String,
    /// The order message to post (JSON of `MsgPostOrder`).
    pub(crate) order: serde_json::Value,
    #[serde(default)]
    pub(crate) challenge_id: Option<u64>,
    #[serde(default)]
    pub(crate) commit_height: u64,
    /// Not posted before this height (a random delay after the commitment).
    #[serde(default)]
    pub(crate) post_after_height: u64,
    #[serde(default)]
    pub(crate) order_id: Option<u64>,
    #[serde(default)]
    pub(crate) passed: u32,
    #[serde(default)]
    pub(crate) failed: u32,
    #[serde(default)]
    pub(crate) reason: Option<String>,
    #[serde(default)]
    pub(crate) revealed_height: u64,
}

impl RingerRecord {
    /// Whether nothing more will happen.
    pub(crate) fn is_final(&self) -> bool {
        matches!(self.stage, RingerStage::Revealed | RingerStage::Abandoned)
    }
}

/// Running totals, exported as metrics.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Counters {
    pub(crate) assignments: u64,
    pub(crate) verdicts_honest: u64,
    pub(crate) verdicts_faulty: u64,
    pub(crate) verdicts_failed: u64,
    pub(crate) fetch_failures: u64,
    pub(crate) training_audits: u64,
    pub(crate) challenges_committed: u64,
    pub(crate) challenges_revealed: u64,
    pub(crate) challenges_abandoned: u64,
    pub(crate) challenge_leases_passed: u64,
    pub(crate) challenge_leases_failed: u64,
    pub(crate) orders_seen: u64,
}

/// The whole document.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct State {
    /// The verifier's address (guards against a data dir reused with another key).
    #[serde(default)]
    pub(crate) verifier: String,
    /// Last block fully processed.
    pub(crate) last_height: u64,
    pub(crate) cases: BTreeMap<String, CaseRecord>,
    pub(crate) ringers: BTreeMap<u64, RingerRecord>,
    #[serde(default)]
    pub(crate) next_ringer: u64,
    /// Ringer credit in ppm of an order: grows by the rate per order seen.
    #[serde(default)]
    pub(crate) ringer_credit_ppm: u64,
    /// Height of the last ringer planted.
    #[serde(default)]
    pub(crate) last_ringer_height: u64,
    pub(crate) counters: Counters,
}

impl State {
    /// Ringers not final.
    pub(crate) fn open_ringers(&self) -> usize {
        self.ringers.values().filter(|r| !r.is_final()).count()
    }

    /// Whether `address` is one of this agent's ringer posters (its orders are not counted
    /// as traffic).
    pub(crate) fn is_poster(&self, address: &str) -> bool {
        self.ringers.values().any(|r| r.poster == address)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_keys_sort_by_lease_then_round_and_state_round_trips() {
        assert!(CaseRecord::key(9, 2) < CaseRecord::key(10, 0));
        let mut s = State::default();
        s.ringers.insert(
            1,
            RingerRecord {
                id: 1,
                stage: RingerStage::Posted,
                poster_key: "alice".into(),
                poster: "gpu1x".into(),
                expected: "00".into(),
                salt: "11".into(),
                order: serde_json::json!({}),
                challenge_id: Some(3),
                commit_height: 5,
                post_after_height: 9,
                order_id: Some(7),
                passed: 0,
                failed: 0,
                reason: None,
                revealed_height: 0,
            },
        );
        assert_eq!(s.open_ringers(), 1);
        assert!(s.is_poster("gpu1x"));
        let back: State = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back.ringers[&1].challenge_id, Some(3));
    }
}
