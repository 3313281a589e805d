//! The verification economy swept over every job value the chain accepts: for each attack
//! strategy, the attacker's expected gain over its best honest alternative, computed with the
//! chain's own functions (`gpuchain_auction::audit`, the default parameters of every module).
//! Then the verification pool over 10,000 honest jobs and the detection of colluding
//! replicas. Prints the worst case of each strategy; every gain must be ≤ 0.
//!
//! `cargo run --release -p gpuchain-verify --example economics_sweep` (numbers in ugpu).

use gpuchain_auction::audit::{any_of, audit_fee, verification_charge};
use gpuchain_auction::AuctionParams;
use gpuchain_slashing::SlashingParams;
use gpuchain_types::{mul_ppm, Amount, Ppm, PPM_ONE};
use gpuchain_verify::economics::{
    signed as i, spot_check_chance, sweep, worst, Economy, Point, MIN_TX_FEE, STRATEGIES,
};
use gpuchain_verify::VerifyParams;

const GPU: Amount = 1_000_000;

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
/// 10,000 GPU; half of the k = 2 orders on two backends, whose results differ in their
/// bytes): the verification pool's inflow (fees at clearing, charges, its share of the take)
/// against its outflow (one audit fee per distinct result of an audited order: equal
/// replicas share one re-run), the re-executed share of the provider compute (spot checks
/// of honest verdicts included), and how the
/// mixed-backend orders settle (their providers find each other within tolerance, so none is
/// disputed; a re-run happens only when the audit draw picks the order).
fn honest_market(c: &Economy) {
    let mut rng = Rng(20_261_201);
    let (mut inflow, mut outflow, mut value, mut audited_value) = (0i128, 0i128, 0i128, 0i128);
    let (mut mixed, mut mixed_rerun) = (0u32, 0u32);
    let vp_share = PPM_ONE - c.auction.validators_share_ppm - c.auction.community_share_ppm;
    for _ in 0..10_000 {
        let price = Amount::from(rng.below(100) + 1) * GPU / 10;
        let k = 1 + u32::try_from(rng.below(2)).unwrap();
        inflow += i(c.verification_fee(price * Amount::from(k)));
        // Two backends: each replica's result is its own group with its own draw.
        let two_backends = k == 2 && rng.below(2) == 0;
        let mut qs = Vec::new();
        for _ in 0..k {
            let pt = Point {
                price,
                bond: Amount::from(rng.below(10) + 1) * 1_000 * GPU,
                score: 500_000 + Ppm::try_from(rng.below(500_001)).unwrap(),
                k,
                open_leases: rng.below(4) + 1,
            };
            qs.push(c.q(&pt));
        }
        let groups: Vec<Vec<Ppm>> = if two_backends {
            qs.iter().map(|q| vec![*q]).collect()
        } else {
            vec![qs]
        };
        let mut reruns = 0u32;
        for group in &groups {
            let audited = group
                .iter()
                .any(|q| rng.below(u64::from(PPM_ONE)) < u64::from(*q));
            let members = Amount::try_from(group.len()).unwrap();
            if audited {
                reruns += 1;
                outflow += i(audit_fee(price, &c.auction));
                audited_value += i(price);
                // A spot-checked honest verdict is re-run once more; the two verifiers
                // share the one fee.
                let spot = spot_check_chance(c, audit_fee(price, &c.auction));
                if rng.below(u64::from(PPM_ONE)) < u64::from(spot) {
                    audited_value += i(price);
                }
            }
            for _ in group {
                let charge =
                    verification_charge(price, any_of(group), &c.auction).div_ceil(members);
                let (_, to_fee_pool) = c.payout(price, charge);
                inflow += i(charge) + i(mul_ppm(to_fee_pool, vp_share).unwrap());
                value += i(price);
            }
        }
        if two_backends {
            mixed += 1;
            mixed_rerun += u32::from(reruns > 0);
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
    println!(
        "honest k = 2 orders on two backends: {mixed}, disputed 0 (compared within \
         tolerance), settled without any re-execution {} (the rest drawn for audit)",
        percent(i128::from(mixed - mixed_rerun) * 1_000_000 / i128::from(mixed.max(1)))
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

fn collusion_detection(c: &Economy) {
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
    let chain = Economy {
        auction: AuctionParams::default(),
        slashing: SlashingParams::default(),
        verify: VerifyParams::default(),
        tx_fee: MIN_TX_FEE,
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
        let worst = worst(&chain, strategy, &points).expect("every strategy applies somewhere");
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
