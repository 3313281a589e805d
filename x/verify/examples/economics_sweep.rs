//! The verification economy swept over every job value the chain accepts: for each attack
//! strategy, the attacker's expected gain over its best honest alternative, computed with the
//! chain's own functions (`gpuchain_auction::audit`, the default parameters of every module).
//! Then the verification pool over 10,000 honest jobs and the detection of colluding
//! replicas. Prints the worst case of each strategy; every gain must be ≤ 0.
//!
//! `cargo run --release -p gpuchain-verify --example economics_sweep` (numbers in ugpu).

use gpuchain_auction::audit::{
    any_of, audit_chance, audit_fee, penalty_per_lease, verification_charge,
};
use gpuchain_auction::escrow::dispute_reserve;
use gpuchain_auction::AuctionParams;
use gpuchain_slashing::SlashingParams;
use gpuchain_types::{mul_ppm, Amount, Ppm, PPM_ONE};
use gpuchain_verify::VerifyParams;

const GPU: Amount = 1_000_000;

struct Chain {
    auction: AuctionParams,
    slashing: SlashingParams,
    verify: VerifyParams,
}

/// One point of the sweep.
#[derive(Clone, Copy, Debug)]
struct Point {
    price: Amount,
    bond: Amount,
    score: Ppm,
    k: u32,
    open_leases: u64,
}

fn i(a: Amount) -> i128 {
    i128::try_from(a).expect("amounts stay below 2^127")
}

/// `p × a` for a probability in ppm, exact in i128 (scaled back, rounded toward −∞).
fn times(p: Ppm, a: i128) -> i128 {
    (i128::from(p) * a).div_euclid(i128::from(PPM_ONE))
}

impl Chain {
    fn q(&self, pt: &Point) -> Ppm {
        audit_chance(pt.score, pt.price, self.penalty(pt), &self.auction)
    }

    fn penalty(&self, pt: &Point) -> Amount {
        penalty_per_lease(pt.bond, pt.open_leases, &self.slashing)
    }

    /// The provider's whole wrong-result slash.
    fn slash(&self, pt: &Point) -> Amount {
        mul_ppm(pt.bond, self.slashing.wrong_result_slash_ppm).unwrap()
    }

    /// What a paid lease leaves the provider, with the loyalty bonus (the attacker's best
    /// case), and the part of the take that reaches the fee pool.
    fn payout(&self, price: Amount, charge: Amount) -> (Amount, Amount) {
        let rest = price - charge.min(price);
        let take = mul_ppm(rest, self.auction.take_rate_ppm).unwrap();
        let bonus = mul_ppm(rest, self.auction.loyalty_bonus_ppm)
            .unwrap()
            .min(take);
        (rest - take + bonus, take - bonus)
    }

    /// The share of the fee pool an attacker that is every validator gets back.
    fn validators_back(&self, to_fee_pool: Amount) -> Amount {
        mul_ppm(to_fee_pool, self.auction.validators_share_ppm).unwrap()
    }

    fn verification_fee(&self, value: Amount) -> Amount {
        mul_ppm(value, self.auction.verification_fee_ppm).unwrap()
    }
}

/// The strategies, each returning the attacker's expected gain in ugpu over its best honest
/// alternative (which is at least doing nothing).
type Strategy = fn(&Chain, &Point) -> Option<i128>;

/// A provider reveals a made-up lone result. Caught with probability `q`: the payment is
/// refunded and `penalty` slashed. Its best honest alternative earns `payout − cost` or
/// nothing; with the cost at its worst (the whole price) that is nothing.
fn lone_wrong_result(c: &Chain, pt: &Point) -> Option<i128> {
    (pt.k == 1).then(|| {
        let q = c.q(pt);
        let charge = verification_charge(pt.price, q, &c.auction);
        let (x, _) = c.payout(pt.price, charge);
        times(PPM_ONE - q, i(x)) - times(q, i(c.penalty(pt)))
    })
}

/// k providers of one owner win every replica and reveal the same made-up hash. Each is
/// drawn independently; if any is, one re-run judges them all and all are faulted. Each
/// lease is charged its share of one fee at the group's chance.
fn colluding_replicas(c: &Chain, pt: &Point) -> Option<i128> {
    (pt.k >= 2).then(|| {
        let q = c.q(pt);
        let caught = any_of(&vec![q; usize::try_from(pt.k).unwrap()]);
        let charge = verification_charge(pt.price, caught, &c.auction).div_ceil(Amount::from(pt.k));
        let (x, _) = c.payout(pt.price, charge);
        let k = i128::from(pt.k);
        times(PPM_ONE - caught, k * i(x)) - times(caught, k * i(c.penalty(pt)))
    })
}

/// One owner is the client, the provider (computing nothing it is not paid for: cost 0)
/// and a verifier that is drawn for every audit of its own leases and calls them honest,
/// and every validator. Transaction fees, which only lower every gain here, are left out. It pays the price and the verification fee, gets back the payout,
/// the audit fee when audited, and the validators' part of the take.
fn self_audit_fee(c: &Chain, pt: &Point) -> Option<i128> {
    (pt.k == 1).then(|| {
        let q = c.q(pt);
        let fee = audit_fee(pt.price, &c.auction);
        let charge = verification_charge(pt.price, q, &c.auction);
        let (x, to_fee_pool) = c.payout(pt.price, charge);
        -i(pt.price) - i(c.verification_fee(pt.price))
            + i(x)
            + times(q, i(fee))
            + i(c.validators_back(to_fee_pool))
    })
}

/// The owner posts a k-replica order, its providers reveal k different hashes, and its
/// verifier calls every one honest: each verdict is paid the fee out of the owner's own
/// dispute reserve; the providers are paid in full.
fn self_dispute_fee(c: &Chain, pt: &Point) -> Option<i128> {
    (pt.k >= 2).then(|| {
        let k = i128::from(pt.k);
        let fee = audit_fee(pt.price, &c.auction);
        let reserve = dispute_reserve(pt.k, pt.price, &c.auction).unwrap();
        let (x, to_fee_pool) = c.payout(pt.price, 0);
        let value = pt.price * Amount::from(pt.k);
        -i(value) - i(c.verification_fee(value)) - i(reserve)
            + k * (i(x) + i(fee) + i(c.validators_back(to_fee_pool)))
    })
}

/// The owner's verifier calls the owner's own lone result faulty to collect the fee and the
/// client's and prover's shares of the slash.
fn self_fault_fee(c: &Chain, pt: &Point) -> Option<i128> {
    (pt.k == 1).then(|| {
        let slash = c.slash(pt);
        let costs = audit_fee(pt.price, &c.auction).min(slash);
        let rest = slash - costs;
        let client = mul_ppm(rest, c.slashing.client_share_ppm).unwrap();
        let prover = mul_ppm(rest, c.slashing.prover_share_ppm).unwrap();
        // Price refunded; the fee (paid back to the pool by the slash) to its verifier.
        -i(c.verification_fee(pt.price)) - i(slash) + i(costs) + i(client) + i(prover)
    })
}

/// A verifier calls an honest provider's result faulty to earn the fee and the prover's
/// share. The provider agent appeals every faulty verdict on a result it computed, so the
/// verdict is overturned by the canonical re-runs and the verifier loses its wrong-verdict
/// slash (at the minimum verifier bond, the most favourable to it).
fn false_faulty_verdict(c: &Chain, pt: &Point) -> Option<i128> {
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
        times(PPM_ONE - appeal, i(reward)) - times(appeal, i(loss))
    })
}

/// A replica that committed leaves (release or no reveal) after another replica revealed:
/// slashed like a wrong result, payment refunded.
fn exit_after_reveal(c: &Chain, pt: &Point) -> Option<i128> {
    (pt.k >= 2).then(|| -i(c.slash(pt)))
}

const STRATEGIES: [(&str, Strategy); 7] = [
    ("lone wrong result", lone_wrong_result),
    ("colluding replicas", colluding_replicas),
    ("self-audit for the fee", self_audit_fee),
    ("self-dispute for the fee", self_dispute_fee),
    ("self-fault for the fee", self_fault_fee),
    ("false faulty verdict", false_faulty_verdict),
    ("exit after a reveal", exit_after_reveal),
];

fn sweep(chain: &Chain) -> Vec<Point> {
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

/// splitmix64, for the honest-market simulation only.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// 10,000 honest jobs (prices 0.1–10 GPU, k = 1 or 2, reputations 0.5–1.0, bonds 1,000–
/// 10,000 GPU): the verification pool's inflow (fees at clearing, charges, its share of the
/// take) against its outflow (one audit fee per audited order: agreeing replicas share one
/// re-run), and the re-executed share of the provider compute.
fn honest_market(c: &Chain) {
    let mut rng = Rng(20_261_201);
    let (mut inflow, mut outflow, mut value, mut audited_value) = (0i128, 0i128, 0i128, 0i128);
    let vp_share = PPM_ONE - c.auction.validators_share_ppm - c.auction.community_share_ppm;
    for _ in 0..10_000 {
        let price = Amount::from(rng.below(100) + 1) * GPU / 10;
        let k = 1 + u32::try_from(rng.below(2)).unwrap();
        inflow += i(c.verification_fee(price * Amount::from(k)));
        let mut audited = false;
        let mut qs = Vec::new();
        for _ in 0..k {
            let pt = Point {
                price,
                bond: Amount::from(rng.below(10) + 1) * 1_000 * GPU,
                score: 500_000 + Ppm::try_from(rng.below(500_001)).unwrap(),
                k,
                open_leases: rng.below(4) + 1,
            };
            let q = c.q(&pt);
            audited |= rng.below(u64::from(PPM_ONE)) < u64::from(q);
            qs.push(q);
        }
        let group = any_of(&qs);
        let members = Amount::try_from(qs.len()).unwrap();
        if audited {
            outflow += i(audit_fee(price, &c.auction));
            audited_value += i(price);
        }
        for _ in &qs {
            let charge = verification_charge(price, group, &c.auction).div_ceil(members);
            let (_, to_fee_pool) = c.payout(price, charge);
            inflow += i(charge) + i(mul_ppm(to_fee_pool, vp_share).unwrap());
            value += i(price);
        }
    }
    println!(
        "honest market, 10,000 orders: pool inflow {} GPU, outflow {} GPU ({}), \
         re-executed {} of the value",
        gpu(inflow),
        gpu(outflow),
        if inflow >= outflow {
            "self-funding"
        } else {
            "NOT self-funding"
        },
        percent(audited_value * 1_000_000 / value.max(1))
    );
}

/// `1 − Π(1 − q_i)` with the misses rounded up: a lower bound on detection.
fn caught_at_least(chances: &[Ppm]) -> Ppm {
    let one = u64::from(PPM_ONE);
    let miss = chances.iter().fold(one, |miss, q| {
        (miss * one.saturating_sub(u64::from(*q))).div_ceil(one)
    });
    Ppm::try_from(one - miss).unwrap_or(PPM_ONE)
}

/// ugpu as GPU with one decimal, rounded down.
fn gpu(ugpu: i128) -> String {
    format!("{}.{}", ugpu / 1_000_000, (ugpu % 1_000_000) / 100_000)
}

/// ppm as a percentage with two decimals, rounded down.
fn percent(ppm: i128) -> String {
    format!("{}.{:02}%", ppm / 10_000, (ppm % 10_000) / 100)
}

fn collusion_detection(c: &Chain) {
    // The best reputation and a cheap job: the lowest audit chance the chain allows.
    let pt = Point {
        price: GPU,
        bond: 1_000_000 * GPU,
        score: PPM_ONE,
        k: 2,
        open_leases: 64,
    };
    let q = c.q(&pt);
    for k in [2usize, 3] {
        let per_job = caught_at_least(&vec![q; k]);
        let within_50 = caught_at_least(&[per_job; 50]);
        println!(
            "{k} colluding replicas at audit chance {} each: caught per job {}, \
             within 50 jobs {}",
            percent(i128::from(q)),
            percent(i128::from(per_job)),
            percent(i128::from(within_50))
        );
    }
}

fn main() {
    let chain = Chain {
        auction: AuctionParams::default(),
        slashing: SlashingParams::default(),
        verify: VerifyParams::default(),
    };
    let points = sweep(&chain);
    println!(
        "{} settings: prices 1 ugpu..{} ugpu, bonds 1,000..1,000,000 GPU, scores 0..1, \
         k 1..5, 1..64 open leases",
        points.len(),
        chain.auction.max_price_per_replica_limit
    );
    println!(
        "{:<26} {:>22}  worst setting",
        "strategy", "max gain (ugpu)"
    );
    let mut worst_overall = i128::MIN;
    for (name, strategy) in STRATEGIES {
        let worst = points
            .iter()
            .filter_map(|pt| strategy(&chain, pt).map(|g| (g, *pt)))
            .max_by_key(|(g, _)| *g)
            .expect("every strategy applies somewhere");
        worst_overall = worst_overall.max(worst.0);
        let pt = worst.1;
        println!(
            "{name:<26} {:>22}  price {} bond {} score {} k {} open {}",
            worst.0, pt.price, pt.bond, pt.score, pt.k, pt.open_leases
        );
    }
    println!("worst over all strategies and settings: {worst_overall} ugpu");
    collusion_detection(&chain);
    honest_market(&chain);
    assert!(worst_overall <= 0, "some strategy pays");
}
