use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_types::{Amount, Ppm, PPM_ONE};
use serde::{Deserialize, Serialize};

use crate::VerifyError;

/// Verification parameters. Defaults are chosen so that a fresh provider that always cheats
/// is caught within 50 jobs with probability ≥ 99% (audits from x/auction plus a 3% ringer
/// rate), honest verification costs ≤ 15% extra compute for a realistic job mix, and
/// cheating has a negative expected gain (see `examples/detection.rs`, [`crate::economics`]
/// and docs/benchmarks.md).
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyParams {
    /// Least bond of an eligible verifier, ugpu.
    pub min_verifier_stake: Amount,
    /// Blocks unbonded verifier stake waits before it is paid out.
    pub verifier_unbonding_blocks: u64,
    /// Blocks an assigned verifier has to post its verdict.
    pub verdict_deadline_blocks: u64,
    /// Blocks a first verdict may be appealed in before it is applied.
    pub appeal_window_blocks: u64,
    /// Deposit an appellant locks, ugpu: returned if the verdict is overturned.
    pub appeal_deposit: Amount,
    /// Share of its bond a verifier loses for a missed deadline (to the verification pool).
    pub verifier_miss_slash_ppm: Ppm,
    /// Share of its bond a verifier loses for a verdict that did not stand.
    pub verifier_wrong_slash_ppm: Ppm,
    /// Share of a wrong-verdict slash paid to an appellant who overturned it (the rest goes
    /// to the verification pool).
    pub wrong_slash_harmed_share_ppm: Ppm,
    /// Blocks a slashed verifier is not drawn and may not commit challenges.
    pub verifier_jail_blocks: u64,
    /// Target share of jobs that are ringers. Not enforced on chain (ringers look like any
    /// order); the verifier agent plants at this rate and the pool is sized for it.
    pub challenge_rate_ppm: Ppm,
    /// Blocks a committed challenge may wait for its reveal.
    pub challenge_ttl_blocks: u64,
    /// Most open (committed, unrevealed) challenges per verifier.
    pub max_open_challenges: u32,
    /// Blocks after a lease's reveal window in which an audit or dispute keeps waiting for a
    /// verdict instead of taking the auction's fallback: while no verifier is eligible it is
    /// held, and a case that closed with every drawn verifier silent is drawn again without
    /// them. 0 keeps the auction's verdict window alone.
    pub max_verdict_wait_blocks: u64,
    /// Most the verification pool pays verifiers in one block, as a share of what it held
    /// when the block's payouts began. Fees beyond it are owed and paid first in later
    /// blocks, oldest first: no rule, however it is gamed, empties the pool faster.
    pub max_pool_outflow_ppm: Ppm,
    /// Chance that an unappealed `honest` first verdict is re-judged by a second verifier
    /// (drawn when its appeal window closes, so the first cannot know): a verifier that
    /// calls a wrong result honest without checking it is slashed like any overturned one.
    pub spot_check_ppm: Ppm,
    /// Deterrence floor of spot checks: a case whose fee is large against the first
    /// verifier's wrong-verdict slash is spot-checked with at least
    /// `⌈fee × spot_check_deterrence_ppm / (fee + slash)⌉`, so that a verifier that calls a
    /// wrong result honest for the fee loses in expectation however valuable the job.
    pub spot_check_deterrence_ppm: Ppm,
}

impl Default for VerifyParams {
    fn default() -> Self {
        VerifyParams {
            min_verifier_stake: 1_000_000_000,
            verifier_unbonding_blocks: 100,
            verdict_deadline_blocks: 30,
            appeal_window_blocks: 10,
            appeal_deposit: 10_000_000,
            verifier_miss_slash_ppm: 20_000,
            verifier_wrong_slash_ppm: 300_000,
            wrong_slash_harmed_share_ppm: 500_000,
            verifier_jail_blocks: 1_000,
            challenge_rate_ppm: 30_000,
            challenge_ttl_blocks: 10_000,
            max_open_challenges: 64,
            max_verdict_wait_blocks: 14_400,
            max_pool_outflow_ppm: 50_000,
            spot_check_ppm: 100_000,
            spot_check_deterrence_ppm: 1_500_000,
        }
    }
}

impl VerifyParams {
    /// Rejects parameters the module cannot run with.
    pub fn validate(&self) -> Result<(), VerifyError> {
        let bad = |what: &str| Err(VerifyError::InvalidParams(what.to_string()));
        if self.min_verifier_stake == 0 {
            return bad("min_verifier_stake must be positive");
        }
        if self.verdict_deadline_blocks == 0
            || self.appeal_window_blocks == 0
            || self.challenge_ttl_blocks == 0
        {
            return bad("verdict_deadline_blocks, appeal_window_blocks and challenge_ttl_blocks must be positive");
        }
        let ppms = [
            self.verifier_miss_slash_ppm,
            self.verifier_wrong_slash_ppm,
            self.wrong_slash_harmed_share_ppm,
            self.challenge_rate_ppm,
            self.max_pool_outflow_ppm,
            self.spot_check_ppm,
        ];
        if ppms.iter().any(|p| *p > PPM_ONE) {
            return bad("fractions must be at most 1000000 ppm");
        }
        if self.max_pool_outflow_ppm == 0 {
            return bad("max_pool_outflow_ppm must be positive");
        }
        if self.max_open_challenges == 0 || self.max_open_challenges > 10_000 {
            return bad("max_open_challenges must be 1..=10000");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_layout_is_the_documented_size() {
        // docs/protocol.md: "VerifyParams …, key verify/params, 112 bytes".
        let bytes = borsh::to_vec(&VerifyParams::default()).unwrap();
        assert_eq!(bytes.len(), 112);
    }

    #[test]
    fn defaults_are_valid_and_bad_ones_are_named() {
        assert_eq!(VerifyParams::default().validate(), Ok(()));
        let cases = [
            VerifyParams {
                min_verifier_stake: 0,
                ..VerifyParams::default()
            },
            VerifyParams {
                verdict_deadline_blocks: 0,
                ..VerifyParams::default()
            },
            VerifyParams {
                verifier_wrong_slash_ppm: PPM_ONE + 1,
                ..VerifyParams::default()
            },
            VerifyParams {
                max_open_challenges: 0,
                ..VerifyParams::default()
            },
        ];
        for p in cases {
            assert!(matches!(p.validate(), Err(VerifyError::InvalidParams(_))));
        }
    }
}
