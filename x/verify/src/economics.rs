//! The economics check: with the chain's own functions (`gpuchain_auction::audit`, escrow's
//! dispute reserve) and the parameters of every module, each way of cheating or of milking
//! verification has a negative expected gain over the attacker's best honest alternative
//! (doing nothing included), at every job value the chain accepts. Each strategy pays the
//! transactions it cannot do without, at [`MIN_TX_FEE`] less the validators' share an
//! attacker that is every validator gets back. Integer-only, as everything in `x/`: amounts
//! in ugpu, gains in `i128` ugpu rounded toward −∞. `examples/economics_sweep.rs` prints the
//! table; the tests below hold CI to it.

use gpuchain_auction::settlement::{
    any_of, audit_chance, audit_fee, dispute_reserve, penalty_per_lease, verification_charge,
    wrong_result_slash_of,
};
use gpuchain_auction::AuctionParams;
use gpuchain_slashing::SlashingParams;
use gpuchain_types::{mul_ppm, Amount, Ppm, PPM_ONE};

use crate::VerifyParams;

const GPU: Amount = 1_000_000;

/// The least fee of any transaction under the default transaction parameters, ugpu: a
/// one-message transaction is at least ~140 bytes, so its gas is at least
/// `140 × gas_per_byte + gas_per_signature + gas_per_msg` = 3,400 at 0.01 ugpu per gas.
/// `x/tx`'s tests check that no transaction the chain accepts pays less.
pub const MIN_TX_FEE: Amount = 30;

/// The parameters an attacker faces.
pub struct Economy {
    /// Auction parameters (audits, fees, take).
    pub auction: AuctionParams,
    /// Slashing parameters.
    pub slashing: SlashingParams,
    /// Verify parameters.
    pub verify: VerifyParams,
    /// What one transaction costs the attacker at least, ugpu (0 leaves fees out).
    pub tx_fee: Amount,
}

/// One point of the sweep.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    /// Price per replica, ugpu.
    pub price: Amount,
    /// The provider's bond, ugpu.
    pub bond: Amount,
    /// The provider's reputation.
    pub score: Ppm,
    /// Replicas of the order.
    pub k: u32,
    /// The provider's open leases sharing the bond.
    pub open_leases: u64,
}

/// `a` as a signed amount.
pub fn signed(a: Amount) -> i128 {
    i128::try_from(a).expect("amounts stay below 2^127")
}

/// `p × a` for a probability in ppm, exact in i128 (scaled back, rounded toward −∞).
fn times(p: Ppm, a: i128) -> i128 {
    (i128::from(p) * a).div_euclid(i128::from(PPM_ONE))
}

impl Economy {
    /// The audit chance of a result at `pt`.
    pub fn q(&self, pt: &Point) -> Ppm {
        audit_chance(pt.score, pt.price, self.penalty(pt), &self.auction)
    }

    /// The slash behind one lease at `pt`.
    pub fn penalty(&self, pt: &Point) -> Amount {
        penalty_per_lease(pt.bond, pt.open_leases, &self.slashing)
    }

    /// The provider's whole wrong-result slash.
    pub fn slash(&self, pt: &Point) -> Amount {
        wrong_result_slash_of(pt.bond, &self.slashing)
    }

    /// What a paid lease leaves the provider, with the loyalty bonus (the attacker's best
    /// case), and the part of the take that reaches the fee pool.
    pub fn payout(&self, price: Amount, charge: Amount) -> (Amount, Amount) {
        let rest = price - charge.min(price);
        let take = mul_ppm(rest, self.auction.take_rate_ppm).unwrap();
        let bonus = mul_ppm(rest, self.auction.loyalty_bonus_ppm)
            .unwrap()
            .min(take);
        (rest - take + bonus, take - bonus)
    }

    /// The share of the fee pool an attacker that is every validator gets back.
    pub fn validators_back(&self, to_fee_pool: Amount) -> Amount {
        mul_ppm(to_fee_pool, self.auction.validators_share_ppm).unwrap()
    }

    /// What `n` transactions cost an attacker that is also every validator: their fees,
    /// less the validators' share of the fee pool it gets back.
    pub fn txs(&self, n: u32) -> i128 {
        let fees = self.tx_fee.saturating_mul(Amount::from(n));
        signed(fees - self.validators_back(fees))
    }

    /// The verification fee of an order of `value`.
    pub fn verification_fee(&self, value: Amount) -> Amount {
        mul_ppm(value, self.auction.verification_fee_ppm).unwrap()
    }
}

/// The strategies, each returning the attacker's expected gain in ugpu over its best honest
/// alternative (which is at least doing nothing).
pub type Strategy = fn(&Economy, &Point) -> Option<i128>;

/// A provider reveals a made-up lone result. Caught with probability `q`: the payment is
/// refunded and `penalty` slashed. Its best honest alternative earns `payout − cost` or
/// nothing; with the cost at its worst (the whole price) that is nothing.
pub fn lone_wrong_result(c: &Economy, pt: &Point) -> Option<i128> {
    (pt.k == 1).then(|| {
        let q = c.q(pt);
        let charge = verification_charge(pt.price, q, &c.auction);
        let (x, _) = c.payout(pt.price, charge);
        // Bid, commit, reveal.
        times(PPM_ONE - q, signed(x)) - times(q, signed(c.penalty(pt))) - c.txs(3)
    })
}

/// The share of all verifier bond the owner of a cheating provider is assumed to hold in
/// [`lone_wrong_result_with_own_verifier`]: a third. Verification, like consensus, assumes
/// no party holds much more of the stake that judges.
pub const OWN_VERIFIER_SHARE_PPM: Ppm = 333_333;

/// The chance an `honest` verdict on a case of `fee` by a verifier at the minimum bond is
/// spot-checked.
pub fn spot_check_chance(c: &Economy, fee: Amount) -> Ppm {
    let slash = mul_ppm(
        c.verify.min_verifier_stake,
        c.verify.verifier_wrong_slash_ppm,
    )
    .unwrap();
    c.verify.spot_check_ppm.max(crate::spot_check_floor(
        fee,
        slash,
        c.verify.spot_check_deterrence_ppm,
    ))
}

/// A provider reveals a made-up lone result and its owner also holds `share` of all
/// verifier bond (at the minimum bond, the most favourable to it). When drawn for the audit
/// (a chance of `share`), its own verifier calls the result honest without running anything
/// and collects the audit fee; the spot check re-judges that verdict with
/// [`spot_check_chance`], and then the provider and the verifier are both slashed and no
/// fee is paid.
pub fn wrong_result_with_verifier_share(c: &Economy, pt: &Point, share: Ppm) -> i128 {
    let q = c.q(pt);
    let fee = audit_fee(pt.price, &c.auction);
    let charge = verification_charge(pt.price, q, &c.auction);
    let (x, _) = c.payout(pt.price, charge);
    let own = times(q, i128::from(share));
    let spot = spot_check_chance(c, fee);
    let escapes = times(PPM_ONE - spot, own);
    let verifier_slash = mul_ppm(
        c.verify.min_verifier_stake,
        c.verify.verifier_wrong_slash_ppm,
    )
    .unwrap();
    let q = i128::from(q);
    let unit = i128::from(PPM_ONE);
    let penalty = signed(c.penalty(pt));
    ((unit - q) * signed(x) + escapes * (signed(x) + signed(fee))
        - (q - own) * penalty
        - (own - escapes) * (penalty + signed(verifier_slash)))
    .div_euclid(unit)
        // Bid, commit, reveal (the verdict only when drawn: left out).
        - c.txs(3)
}

/// [`wrong_result_with_verifier_share`] at [`OWN_VERIFIER_SHARE_PPM`].
pub fn lone_wrong_result_with_own_verifier(c: &Economy, pt: &Point) -> Option<i128> {
    (pt.k == 1).then(|| wrong_result_with_verifier_share(c, pt, OWN_VERIFIER_SHARE_PPM))
}

/// k providers of one owner win every replica and reveal the same made-up hash. Each is
/// drawn independently; if any is, one re-run judges them all and all are faulted. Each
/// lease is charged its share of one fee at the group's chance.
pub fn colluding_replicas(c: &Economy, pt: &Point) -> Option<i128> {
    (pt.k >= 2).then(|| {
        let q = c.q(pt);
        let caught = any_of(&vec![q; usize::try_from(pt.k).unwrap()]);
        let charge = verification_charge(pt.price, caught, &c.auction).div_ceil(Amount::from(pt.k));
        let (x, _) = c.payout(pt.price, charge);
        let k = i128::from(pt.k);
        times(PPM_ONE - caught, k * signed(x))
            - times(caught, k * signed(c.penalty(pt)))
            - c.txs(3 * pt.k)
    })
}

/// One owner is the client, the provider (computing nothing it is not paid for: cost 0)
/// and a verifier that is drawn for every audit of its own leases and calls them honest,
/// and every validator. Transaction fees, which only lower every gain here, are left out. It pays the price and the verification fee, gets back the payout,
/// the audit fee when audited, and the validators' part of the take.
pub fn self_audit_fee(c: &Economy, pt: &Point) -> Option<i128> {
    (pt.k == 1).then(|| {
        let q = c.q(pt);
        let fee = audit_fee(pt.price, &c.auction);
        let charge = verification_charge(pt.price, q, &c.auction);
        let (x, to_fee_pool) = c.payout(pt.price, charge);
        // Post, bid, commit, reveal.
        -signed(pt.price) - signed(c.verification_fee(pt.price))
            + signed(x)
            + times(q, signed(fee))
            + signed(c.validators_back(to_fee_pool))
            - c.txs(4)
    })
}

/// The owner posts a k-replica order, its providers reveal k different hashes, and its
/// verifier calls every one honest: each verdict is paid the fee out of the owner's own
/// dispute reserve; the providers are paid in full.
pub fn self_dispute_fee(c: &Economy, pt: &Point) -> Option<i128> {
    (pt.k >= 2).then(|| {
        let k = i128::from(pt.k);
        let fee = audit_fee(pt.price, &c.auction);
        let reserve = dispute_reserve(pt.k, pt.price, &c.auction).unwrap();
        let (x, to_fee_pool) = c.payout(pt.price, 0);
        let value = pt.price * Amount::from(pt.k);
        // Post; bid, commit, reveal and compare per replica.
        -signed(value) - signed(c.verification_fee(value)) - signed(reserve)
            + k * (signed(x) + signed(fee) + signed(c.validators_back(to_fee_pool)))
            - c.txs(1 + 4 * pt.k)
    })
}

/// The owner's verifier calls the owner's own lone result faulty to collect the fee and the
/// client's and prover's shares of the slash.
pub fn self_fault_fee(c: &Economy, pt: &Point) -> Option<i128> {
    (pt.k == 1).then(|| {
        let slash = c.slash(pt);
        let costs = audit_fee(pt.price, &c.auction).min(slash);
        let rest = slash - costs;
        let client = mul_ppm(rest, c.slashing.client_share_ppm).unwrap();
        let prover = mul_ppm(rest, c.slashing.prover_share_ppm).unwrap();
        // Price refunded; the fee (paid back to the pool by the slash) to its verifier.
        // Post, bid, commit, reveal, verdict.
        -signed(c.verification_fee(pt.price)) - signed(slash)
            + signed(costs)
            + signed(client)
            + signed(prover)
            - c.txs(5)
    })
}

/// A verifier calls an honest provider's result faulty to earn the fee and the prover's
/// share. The provider agent appeals every faulty verdict on a result it computed, so the
/// verdict is overturned by the canonical re-runs and the verifier loses its wrong-verdict
/// slash (at the minimum verifier bond, the most favourable to it).
pub fn false_faulty_verdict(c: &Economy, pt: &Point) -> Option<i128> {
    (pt.k == 1).then(|| {
        let appeal: Ppm = PPM_ONE;
        let slash = c.slash(pt);
        let costs = audit_fee(pt.price, &c.auction).min(slash);
        let reward = costs + mul_ppm(slash - costs, c.slashing.prover_share_ppm).unwrap();
        let loss = mul_ppm(
            c.verify.min_verifier_stake,
            c.verify.verifier_wrong_slash_ppm,
        )
        .unwrap();
        times(PPM_ONE - appeal, signed(reward)) - times(appeal, signed(loss)) - c.txs(1)
    })
}

/// One owner holds a verifier at the minimum bond, a poster, a provider that computes its
/// answer (at no cost), and [`OWN_VERIFIER_SHARE_PPM`] of all verifier bond. Its verifier
/// reveals a ringer that calls the answer wrong, its provider appeals (the deposit comes
/// back), and two verifiers overturn the ringer and share the case's fee, its own with that
/// share. A ringer's case exists whether or not an audit was drawn, so its jurors are paid
/// out of what the ringer owner's slash put into the pool, never more; the appellant's share
/// of that slash comes back to the owner.
pub fn false_ringer_for_the_fee(c: &Economy, pt: &Point) -> Option<i128> {
    (pt.k == 1).then(|| {
        let slash = mul_ppm(
            c.verify.min_verifier_stake,
            c.verify.verifier_wrong_slash_ppm,
        )
        .unwrap();
        let harmed = mul_ppm(slash, c.verify.wrong_slash_harmed_share_ppm).unwrap();
        let fee = audit_fee(pt.price, &c.auction).min(slash - harmed);
        let (x, to_fee_pool) = c.payout(pt.price, 0);
        // Post, bid, commit, reveal, commit and reveal the ringer, appeal.
        -signed(pt.price) - signed(c.verification_fee(pt.price))
            + signed(x)
            + signed(c.validators_back(to_fee_pool))
            - signed(slash)
            + signed(harmed)
            + times(OWN_VERIFIER_SHARE_PPM, signed(fee))
            - c.txs(7)
    })
}

/// A replica that committed leaves (release or no reveal) after another replica revealed:
/// slashed like a wrong result, payment refunded.
pub fn exit_after_reveal(c: &Economy, pt: &Point) -> Option<i128> {
    // Bid and commit.
    (pt.k >= 2).then(|| -signed(c.slash(pt)) - c.txs(2))
}

/// Every strategy, by name.
pub const STRATEGIES: [(&str, Strategy); 9] = [
    ("lone wrong result", lone_wrong_result),
    (
        "lone wrong result, own verifier",
        lone_wrong_result_with_own_verifier,
    ),
    ("colluding replicas", colluding_replicas),
    ("self-audit for the fee", self_audit_fee),
    ("self-dispute for the fee", self_dispute_fee),
    ("self-fault for the fee", self_fault_fee),
    ("false faulty verdict", false_faulty_verdict),
    ("false ringer for the fee", false_ringer_for_the_fee),
    ("exit after a reveal", exit_after_reveal),
];

/// The settings swept: prices from 1 ugpu to the chain's limit, bonds, reputations, k and
/// open leases.
pub fn sweep(chain: &Economy) -> Vec<Point> {
    let limit = chain.auction.max_price_per_replica_limit;
    let mut prices: Vec<Amount> = (0..=15).map(|e| 10u128.pow(e)).collect();
    prices.extend([3 * GPU, 29 * GPU, 300 * GPU, 999 * GPU, limit]);
    prices.retain(|p| *p <= limit);
    let mut points = Vec::new();
    for &price in &prices {
        for bond in [1_000 * GPU, 10_000 * GPU, 1_000_000 * GPU] {
            for score in [0, 500_000, 900_000, PPM_ONE] {
                for k in [1, 2, 3, 5] {
                    for open_leases in [1, 4, 64] {
                        points.push(Point {
                            price,
                            bond,
                            score,
                            k,
                            open_leases,
                        });
                    }
                }
            }
        }
    }
    points
}

/// The worst (largest) gain of `strategy` over `points`, with where it is.
pub fn worst(e: &Economy, strategy: Strategy, points: &[Point]) -> Option<(i128, Point)> {
    points
        .iter()
        .filter_map(|pt| strategy(e, pt).map(|g| (g, *pt)))
        .max_by_key(|(g, _)| *g)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Economy {
        Economy {
            auction: AuctionParams::default(),
            slashing: SlashingParams::default(),
            verify: VerifyParams::default(),
            tx_fee: MIN_TX_FEE,
        }
    }

    #[test]
    fn no_strategy_gains_at_any_value_the_chain_accepts() {
        let e = defaults();
        let points = sweep(&e);
        assert_eq!(points.len(), 3_024);
        for (name, strategy) in STRATEGIES {
            let (gain, at) = worst(&e, strategy, &points).expect("applies somewhere");
            assert!(gain < 0, "{name}: {gain} ugpu at {at:?}");
        }
    }

    #[test]
    fn without_transaction_fees_milking_a_tiny_job_breaks_even() {
        // Fees round to zero on a 10 ugpu job: only the transactions make it a loss.
        let free = Economy {
            tx_fee: 0,
            ..defaults()
        };
        let pt = Point {
            price: 10,
            bond: 1_000_000 * GPU,
            score: 0,
            k: 1,
            open_leases: 64,
        };
        assert_eq!(self_audit_fee(&free, &pt), Some(0));
        assert!(self_audit_fee(&defaults(), &pt).unwrap() < 0);
    }

    #[test]
    fn without_the_spot_check_floor_a_verifier_owner_gains_on_valuable_fakes() {
        // The check can fail: with a flat 10% spot check, the owner of a cheating provider
        // spread over many leases and of a third of the verifier stake collects the audit
        // fee of a valuable job from its own rubber stamp more often than it is caught.
        let pt = Point {
            price: 300 * GPU,
            bond: 1_000 * GPU,
            score: PPM_ONE,
            k: 1,
            open_leases: 64,
        };
        let flat = Economy {
            verify: VerifyParams {
                spot_check_deterrence_ppm: 0,
                ..VerifyParams::default()
            },
            ..defaults()
        };
        assert!(wrong_result_with_verifier_share(&flat, &pt, OWN_VERIFIER_SHARE_PPM) > 0);
        assert!(wrong_result_with_verifier_share(&defaults(), &pt, OWN_VERIFIER_SHARE_PPM) < 0);
        // A verifier bond a third of the fee: certain spot checks.
        assert_eq!(spot_check_chance(&defaults(), 900 * GPU), PPM_ONE);
        assert_eq!(
            spot_check_chance(&defaults(), GPU),
            100_000,
            "cheap cases: 10%"
        );
    }

    #[test]
    fn without_the_deterrence_floor_a_valuable_lone_cheat_would_pay() {
        // The check can fail: with reputation's rate alone, faking a 300 GPU job of a
        // provider at the minimum bond and the best reputation pays.
        let e = Economy {
            auction: AuctionParams {
                audit_deterrence_ppm: 0,
                ..AuctionParams::default()
            },
            ..defaults()
        };
        let pt = Point {
            price: 300 * GPU,
            bond: 1_000 * GPU,
            score: PPM_ONE,
            k: 1,
            open_leases: 1,
        };
        assert!(lone_wrong_result(&e, &pt).unwrap() > 0);
        assert!(lone_wrong_result(&defaults(), &pt).unwrap() < 0);
    }
}
