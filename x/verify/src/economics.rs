//! The economics check of issue 6: with the chain's parameters, the expected gain from
//! cheating, relative to behaving honestly, must be negative for every kind of fault.
//!
//! For a provider that saves `saved` ugpu of compute by cheating on a job paid `price`, and
//! is caught with probability `q`, losing the payment and `slash` of its bond:
//! `gain = (1 − q) × saved + q × (saved − price − slash) = saved − q × (price + slash)`.
//! For a verifier that posts a false `faulty` verdict to earn the prover's share of the
//! provider's slash: `gain = (1 − q) × reward − q × slash_of_verifier`, where `q` is the
//! chance the provider appeals (an honest provider gets its deposit back, so it should).
//! Integer-only, as everything in `x/`: probabilities in ppm, amounts in ugpu, gains in
//! `i128` ugpu rounded toward −∞.

use gpuchain_auction::audit::{audit_fee, audit_probability};
use gpuchain_auction::AuctionParams;
use gpuchain_slashing::{FaultKind, SlashingParams};
use gpuchain_types::{mul_ppm, Amount, Ppm, PPM_ONE};

use crate::VerifyParams;

/// The faults the check covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheatKind {
    /// A lone (k = 1) replica returns a result it did not compute. Caught by an audit
    /// (x/auction's reputation-dependent probability) or a ringer (`challenge_rate_ppm`).
    LoneWrongResult,
    /// One of k ≥ 2 replicas returns a wrong result: the honest replica's hash differs, so
    /// the results are always disputed and verified.
    DisputedWrongResult,
    /// A training worker fakes one (round, worker) segment in ten; a training audit re-runs
    /// one random segment, so it is caught with a tenth of the lone-result probability and
    /// saves a tenth of the cost.
    UselessTraining,
    /// A replica copies another replica's revealed hash instead of computing: the reveal
    /// cannot open its own commitment, so the lease goes unrevealed after the others revealed
    /// every time (slashed as a wrong result).
    CopiedResult,
    /// A verifier posts `faulty` on a correct result to earn the prover's share of the
    /// provider's slash; caught when the provider appeals (assumed half the time).
    FalseFaultyVerdict,
}

/// Every kind, for tables and tests.
pub const ALL_KINDS: [CheatKind; 5] = [
    CheatKind::LoneWrongResult,
    CheatKind::DisputedWrongResult,
    CheatKind::UselessTraining,
    CheatKind::CopiedResult,
    CheatKind::FalseFaultyVerdict,
];

/// The setting of the check.
#[derive(Clone, Debug)]
pub struct Setting {
    /// Job price per replica, ugpu.
    pub price: Amount,
    /// The provider's compute cost of an honest run, ugpu.
    pub cost: Amount,
    /// The provider's bond, ugpu.
    pub provider_bond: Amount,
    /// The verifier's bond, ugpu.
    pub verifier_bond: Amount,
    /// The provider's reputation (1,000,000 is the worst case: the lowest audit rate).
    pub score: Ppm,
    /// Probability that a wronged provider appeals a false verdict.
    pub appeal_ppm: Ppm,
    /// Module parameters.
    pub auction: AuctionParams,
    /// Slashing parameters.
    pub slashing: SlashingParams,
    /// Verify parameters.
    pub verify: VerifyParams,
}

/// `1 − (1 − a)(1 − b)` in ppm: caught by either of two independent checks.
pub fn either_ppm(a: Ppm, b: Ppm) -> Ppm {
    let one = u64::from(PPM_ONE);
    let miss = one.saturating_sub(u64::from(a.min(PPM_ONE)))
        * one.saturating_sub(u64::from(b.min(PPM_ONE)))
        / one;
    Ppm::try_from(one.saturating_sub(miss)).unwrap_or(PPM_ONE)
}

/// Probability that one wrong lone result is caught: an audit or a ringer.
pub fn lone_detection_ppm(score: Ppm, auction: &AuctionParams, verify: &VerifyParams) -> Ppm {
    either_ppm(audit_probability(score, auction), verify.challenge_rate_ppm)
}

/// `(1 − q) × win − q × loss` in ugpu, rounded toward −∞.
fn expectation(q: Ppm, win: Amount, loss: Amount) -> i128 {
    let one = i128::from(PPM_ONE);
    let q = i128::from(q.min(PPM_ONE));
    let win = i128::try_from(win).unwrap_or(i128::MAX / 4_000_000);
    let loss = i128::try_from(loss).unwrap_or(i128::MAX / 4_000_000);
    ((one - q) * win - q * loss).div_euclid(one)
}

/// Expected gain of `kind` over honest behaviour in `s`, ugpu (negative: cheating loses).
pub fn expected_gain(kind: CheatKind, s: &Setting) -> i128 {
    let slash = |f: FaultKind| mul_ppm(s.provider_bond, s.slashing.fault_slash_ppm(f)).unwrap_or(0);
    let lone = lone_detection_ppm(s.score, &s.auction, &s.verify);
    // A provider that is caught also loses the payment and the slash; the saving stays.
    let provider = |q: Ppm, saved: Amount, f: FaultKind| {
        expectation(
            q,
            saved,
            s.price.saturating_add(slash(f)).saturating_sub(saved),
        )
    };
    match kind {
        CheatKind::LoneWrongResult => provider(lone, s.cost, FaultKind::WrongResult),
        CheatKind::DisputedWrongResult => provider(PPM_ONE, s.cost, FaultKind::WrongResult),
        CheatKind::UselessTraining => provider(lone / 10, s.cost / 10, FaultKind::WrongResult),
        CheatKind::CopiedResult => provider(PPM_ONE, s.cost, FaultKind::ExitAfterReveal),
        CheatKind::FalseFaultyVerdict => {
            // The audit fee comes out of the slash first; the prover's share is of the rest.
            let slashed = slash(FaultKind::WrongResult);
            let fee = audit_fee(s.price, &s.auction).min(slashed);
            let reward = mul_ppm(slashed - fee, s.slashing.prover_share_ppm)
                .unwrap_or(0)
                .saturating_add(fee);
            let loss = mul_ppm(s.verifier_bond, s.verify.verifier_wrong_slash_ppm).unwrap_or(0);
            expectation(s.appeal_ppm, reward, loss)
        }
    }
}

/// The highest job price at which cheating on one lone job still does not pay for a
/// provider with `score` and `bond`: `q × slash / (1 − q)` (taking `saved = price`, the
/// provider's best case). Above it, only the lost future income (jail, reputation) deters.
pub fn lone_break_even_price(
    score: Ppm,
    bond: Amount,
    auction: &AuctionParams,
    slashing: &SlashingParams,
    verify: &VerifyParams,
) -> Amount {
    let q = u128::from(lone_detection_ppm(score, auction, verify));
    let slash = mul_ppm(bond, slashing.wrong_result_slash_ppm).unwrap_or(0);
    let miss = u128::from(PPM_ONE).saturating_sub(q);
    slash
        .saturating_mul(q)
        .checked_div(miss)
        .unwrap_or(Amount::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Setting {
        Setting {
            price: 1_000_000,
            cost: 800_000,
            provider_bond: 1_000_000_000,
            verifier_bond: VerifyParams::default().min_verifier_stake,
            score: PPM_ONE,
            appeal_ppm: 500_000,
            auction: AuctionParams::default(),
            slashing: SlashingParams::default(),
            verify: VerifyParams::default(),
        }
    }

    #[test]
    fn cheating_has_negative_expected_gain_for_every_fault_kind_with_default_params() {
        // Worst case for detection: the best reputation (lowest audit rate), a provider at
        // the minimum bond, a 1 GPU job, 80% of the price saved by not computing.
        let s = defaults();
        for kind in ALL_KINDS {
            let gain = expected_gain(kind, &s);
            assert!(gain < 0, "{kind:?}: expected gain {gain} ugpu");
        }
        // At a neutral reputation (a new provider) detection is higher still.
        let fresh = Setting {
            score: 500_000,
            ..defaults()
        };
        for kind in ALL_KINDS {
            assert!(
                expected_gain(kind, &fresh) <= expected_gain(kind, &s),
                "{kind:?}"
            );
        }
        // Saving the whole price does not change the sign either.
        let all_saved = Setting {
            cost: 1_000_000,
            ..defaults()
        };
        for kind in ALL_KINDS {
            assert!(expected_gain(kind, &all_saved) < 0, "{kind:?}");
        }
    }

    #[test]
    fn the_lone_job_bound_is_documented_and_large_enough() {
        let s = defaults();
        // 6% audits at the best reputation, 3% ringers: caught 8.82% of the time.
        assert_eq!(lone_detection_ppm(PPM_ONE, &s.auction, &s.verify), 88_200);
        assert_eq!(lone_detection_ppm(500_000, &s.auction, &s.verify), 204_600);
        let bound =
            lone_break_even_price(PPM_ONE, 1_000_000_000, &s.auction, &s.slashing, &s.verify);
        // 300 GPU slash × 0.0882 / 0.9118 = 29.02 GPU per job at the minimum bond.
        assert_eq!(bound / 10_000, 2_901);
        let above = Setting {
            price: bound + 1_000,
            cost: bound + 1_000,
            ..defaults()
        };
        assert!(
            expected_gain(CheatKind::LoneWrongResult, &above) > 0,
            "the bound is tight"
        );
    }

    #[test]
    fn either_combines_independent_checks() {
        assert_eq!(either_ppm(0, 0), 0);
        assert_eq!(either_ppm(PPM_ONE, 0), PPM_ONE);
        assert_eq!(either_ppm(500_000, 500_000), 750_000);
        assert_eq!(either_ppm(u32::MAX, 7), PPM_ONE);
    }
}
