//! How likely a result is audited, and what that costs the lease.
//!
//! A provider that returns a result it did not compute saves at most the price and, caught
//! with probability `q`, loses the price and the wrong-result slash. Reputation lowers `q`
//! toward `audit_min_ppm`, but never below the deterrence floor
//! `q × (price + penalty) ≥ price × audit_deterrence_ppm / 10^6`, so cheating on a job loses in
//! expectation whatever its price and whatever the provider's reputation. `penalty` is the
//! slash the provider's bond covers for each of its open leases: a provider cheating on all
//! its leases at once loses its bond only once.
//!
//! Every judged lease pays the verification pool `q × audit_fee` (rounded up) out of its
//! price when it is paid, so the audits of a provider's results are funded by that
//! provider's results: an owner of a provider and a verifier can at best get back, through
//! its verifier's audit fees, what its provider paid in. A disputed lease pays the whole fee.

use gpuchain_slashing::SlashingParams;
use gpuchain_types::{mul_ppm, Amount, BlockCtx, Ppm, PPM_ONE};

use crate::{AuctionParams, Lease};

/// Audit probability from reputation alone: `audit_max − (audit_max − audit_min) × score /
/// 10^6`.
pub fn audit_probability(score: Ppm, params: &AuctionParams) -> Ppm {
    let span = u64::from(params.audit_max_ppm.saturating_sub(params.audit_min_ppm));
    let cut = span
        .saturating_mul(u64::from(score.min(PPM_ONE)))
        .checked_div(u64::from(PPM_ONE))
        .unwrap_or(0);
    params
        .audit_max_ppm
        .saturating_sub(Ppm::try_from(cut).unwrap_or(0))
}

/// The wrong-result slash a bond of `bond` pays (never more than the bond).
pub fn wrong_result_slash_of(bond: Amount, slashing: &SlashingParams) -> Amount {
    mul_ppm(bond, slashing.wrong_result_slash_ppm).unwrap_or(bond)
}

/// The wrong-result slash that stands behind each of a provider's `open_leases`.
pub fn penalty_per_lease(bond: Amount, open_leases: u64, slashing: &SlashingParams) -> Amount {
    wrong_result_slash_of(bond, slashing)
        .checked_div(u128::from(open_leases.max(1)))
        .unwrap_or(0)
}

/// The least audit probability at which cheating on a result of `price` backed by `penalty`
/// loses in expectation: `⌈price × audit_deterrence_ppm / (price + penalty)⌉`, at most 10^6.
pub fn deterrence_floor(price: Amount, penalty: Amount, params: &AuctionParams) -> Ppm {
    let over = price.saturating_add(penalty);
    if over == 0 {
        return 0;
    }
    // price ≤ 10^24 (max_price_per_replica_limit) and deterrence ≤ 10^7 keep this in u128.
    let wanted = price
        .saturating_mul(u128::from(params.audit_deterrence_ppm))
        .div_ceil(over);
    Ppm::try_from(wanted.min(u128::from(PPM_ONE))).unwrap_or(PPM_ONE)
}

/// The audit probability of a result: reputation's, raised to the deterrence floor.
pub fn audit_chance(score: Ppm, price: Amount, penalty: Amount, params: &AuctionParams) -> Ppm {
    audit_probability(score, params).max(deterrence_floor(price, penalty, params))
}

/// The chance that at least one of independent draws with `chances` hits:
/// `1 − Π(1 − q_i)`, rounded up.
pub fn any_of(chances: &[Ppm]) -> Ppm {
    let one = u64::from(PPM_ONE);
    let miss = chances.iter().fold(one, |miss, q| {
        miss.saturating_mul(one.saturating_sub(u64::from(*q)))
            .checked_div(one)
            .unwrap_or(0)
    });
    Ppm::try_from(one.saturating_sub(miss)).unwrap_or(PPM_ONE)
}

/// The audit fee of a lease of `price`: what the verifier whose verdict stands is paid.
pub fn audit_fee(price: Amount, params: &AuctionParams) -> Amount {
    mul_ppm(price, params.audit_fee_ppm).unwrap_or(price)
}

/// The availability fee of a lease of `price`: what the verifier that fetched an unfetched
/// output before payment is paid.
pub fn availability_fee(price: Amount, params: &AuctionParams) -> Amount {
    mul_ppm(price, params.availability_fee_ppm).unwrap_or(price)
}

/// What a lease audited with probability `q` pays the verification pool: `⌈q × fee⌉`.
pub fn verification_charge(price: Amount, q: Ppm, params: &AuctionParams) -> Amount {
    audit_fee(price, params)
        .saturating_mul(u128::from(q.min(PPM_ONE)))
        .div_ceil(u128::from(PPM_ONE))
}

/// Whether the draw for `lease` in this block falls under `probability`.
pub fn audit_drawn(ctx: &BlockCtx, lease: &Lease, probability: Ppm) -> bool {
    let mut subject = lease.id.to_be_bytes().to_vec();
    subject.extend_from_slice(&lease.commitment.unwrap_or_default());
    ctx.draw_ppm("verify/audit", &subject) < u64::from(probability)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LeaseState;
    use gpuchain_types::Address;

    const GPU: Amount = 1_000_000;

    fn lease(id: u64) -> Lease {
        Lease {
            id,
            order_id: 0,
            provider: Address([1; 20]),
            client: Address([2; 20]),
            price: 1,
            created_height: 0,
            deadline_height: 0,
            reveal_end_height: 0,
            commitment: Some([id.to_le_bytes()[0]; 32]),
            result_hash: None,
            payout_height: None,
            verdict_deadline_height: None,
            state: LeaseState::Revealed,
            verification_charge: 0,
            fetched: false,
        }
    }

    #[test]
    fn audit_probability_falls_with_reputation_between_the_bounds() {
        let params = AuctionParams::default();
        assert_eq!(audit_probability(0, &params), params.audit_max_ppm);
        assert_eq!(audit_probability(PPM_ONE, &params), params.audit_min_ppm);
        assert_eq!(audit_probability(500_000, &params), 180_000);
        assert_eq!(audit_probability(u32::MAX, &params), params.audit_min_ppm);
    }

    #[test]
    fn the_floor_makes_cheating_lose_at_every_price_and_reputation() {
        let params = AuctionParams::default();
        let slashing = SlashingParams::default();
        let deterrence = i128::from(params.audit_deterrence_ppm);
        for bond in [1_000 * GPU, 10_000 * GPU, 1_000_000 * GPU] {
            for open in [1u64, 3, 100] {
                let penalty = penalty_per_lease(bond, open, &slashing);
                for price in [
                    1,
                    999,
                    GPU,
                    29 * GPU,
                    300 * GPU,
                    10_000 * GPU,
                    10u128.pow(24),
                ] {
                    let q = audit_chance(PPM_ONE, price, penalty, &params);
                    // Saving the whole price: gain = price − q × (price + penalty).
                    let caught = i128::from(q) * i128::try_from(price + penalty).unwrap();
                    let gain = i128::try_from(price).unwrap() * 1_000_000 - caught;
                    let bound = i128::try_from(price).unwrap() * (1_000_000 - deterrence);
                    assert!(
                        q == PPM_ONE || gain <= bound,
                        "bond {bond} open {open} price {price}: q {q}"
                    );
                    assert!(gain < 0, "bond {bond} open {open} price {price}: q {q}");
                }
            }
        }
        // A 1 GPU job of a provider at the minimum bond keeps the reputation's rate; a
        // 100 GPU job is audited a third of the time; one worth the whole slash always is.
        let penalty = penalty_per_lease(1_000 * GPU, 1, &slashing);
        assert_eq!(audit_chance(PPM_ONE, GPU, penalty, &params), 60_000);
        assert_eq!(deterrence_floor(100 * GPU, penalty, &params), 375_000);
        assert_eq!(deterrence_floor(300 * GPU, penalty, &params), 750_000);
        assert_eq!(deterrence_floor(10_000 * GPU, penalty, &params), PPM_ONE);
        let off = AuctionParams {
            audit_deterrence_ppm: 0,
            ..params.clone()
        };
        assert_eq!(deterrence_floor(10_000 * GPU, penalty, &off), 0);
        assert_eq!(deterrence_floor(0, 0, &params), 0);
    }

    #[test]
    fn a_group_is_audited_when_any_member_is_drawn() {
        assert_eq!(any_of(&[]), 0);
        assert_eq!(any_of(&[60_000]), 60_000);
        assert_eq!(any_of(&[60_000, 60_000]), 116_400);
        assert_eq!(any_of(&[500_000, 500_000, 500_000]), 875_000);
        assert_eq!(any_of(&[PPM_ONE, 0]), PPM_ONE);
        assert_eq!(any_of(&[u32::MAX]), PPM_ONE);
        // Rounded up: 1 − (1 − 1/3)² is 555,555.6 ppm.
        assert_eq!(any_of(&[333_333, 333_333]), 555_556);
    }

    #[test]
    fn the_charge_is_the_expected_fee_rounded_up() {
        let params = AuctionParams::default();
        assert_eq!(verification_charge(GPU, 60_000, &params), 60_000);
        assert_eq!(verification_charge(1, 60_000, &params), 1, "never free");
        assert_eq!(verification_charge(0, 60_000, &params), 0);
        assert_eq!(verification_charge(GPU, PPM_ONE, &params), GPU);
        assert_eq!(verification_charge(GPU, u32::MAX, &params), GPU);
        assert_eq!(
            verification_charge(10u128.pow(24), 300_000, &params),
            3 * 10u128.pow(23)
        );
    }

    #[test]
    fn the_audit_draw_hits_its_probability() {
        for p in [0u32, 50_000, 300_000, PPM_ONE] {
            let hits = (0..20_000u64)
                .filter(|&i| audit_drawn(&crate::test_utils::ctx(i / 7), &lease(i), p))
                .count() as u64;
            let expected = 20_000 * u64::from(p) / u64::from(PPM_ONE);
            assert!(
                hits.abs_diff(expected) <= 400,
                "p={p}: {hits} vs {expected}"
            );
        }
    }
}
