use gpuchain_types::{Address, MemState, Overlay};

use super::*;

fn check_decay(score: Ppm, blocks: u64, expect: Ppm) {
    assert_eq!(decay(score, blocks, 100), expect, "{score} after {blocks}");
}

#[test]
fn decay_halves_per_half_life_and_interpolates_linearly() {
    check_decay(900_000, 0, 900_000);
    check_decay(900_000, 100, 700_000);
    check_decay(900_000, 200, 600_000);
    check_decay(900_000, 50, 800_000);
    check_decay(100_000, 100, 300_000);
    check_decay(100_000, 50, 200_000);
    check_decay(0, 10_000, 500_000);
    check_decay(1_000_000, u64::MAX, 500_000);
    check_decay(NEUTRAL_PPM, 77, NEUTRAL_PPM);
    assert_eq!(
        decay(900_000, 1_000, 0),
        900_000,
        "zero half-life: no decay"
    );
    // Monotone toward neutral, never past it.
    let mut last = 1_000_000;
    for t in 0..1_000 {
        let s = decay(1_000_000, t, 100);
        assert!(s <= last && s >= NEUTRAL_PPM, "t={t}");
        last = s;
    }
}

#[test]
fn steps_stay_within_bounds() {
    let p = ReputationParams::default();
    let mut s = NEUTRAL_PPM;
    for _ in 0..1_000 {
        s = apply(s, Outcome::ChallengePassed, &p);
        assert!(s <= PPM_ONE);
    }
    assert!(s > 999_000);
    for _ in 0..1_000 {
        s = apply(s, Outcome::Fault, &p);
    }
    assert_eq!(s, 0);
    assert_eq!(apply(0, Outcome::MissedDeadline, &p), 0);
    assert_eq!(apply(PPM_ONE, Outcome::Accepted, &p), PPM_ONE);
    assert_eq!(apply(500_000, Outcome::Accepted, &p), 525_000);
    assert_eq!(apply(500_000, Outcome::Fault, &p), 250_000);
    assert_eq!(apply(500_000, Outcome::MissedDeadline, &p), 400_000);
}

#[test]
fn outcomes_are_recorded_with_a_bounded_history() {
    let base = MemState::new();
    let mut fork = Overlay::new(&base);
    let params = ReputationParams {
        max_history: 3,
        half_life_blocks: 100,
        ..ReputationParams::default()
    };
    ReputationGenesis { params }.apply(&mut fork).unwrap();
    let p = Address([1; 20]);
    assert_eq!(fork.score(&p, 5), NEUTRAL_PPM);
    fork.record_outcome(&p, 10, Outcome::Fault, 1).unwrap();
    assert_eq!(fork.score(&p, 10), 250_000);
    assert_eq!(
        fork.score(&p, 110),
        375_000,
        "half the distance back after a half-life"
    );
    for h in 11..15 {
        fork.record_outcome(&p, h, Outcome::Accepted, GPU).unwrap();
    }
    let history = fork.reputation_history(&p);
    assert_eq!(
        history.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![2, 3, 4]
    );
    let r = fork.reputation(&p);
    assert_eq!((r.faults, r.accepted, r.last_bad_height), (1, 4, Some(10)));
    assert_eq!(history.last().map(|e| e.after_ppm), Some(r.score_ppm));
}

const GPU: u128 = 1_000_000;

#[test]
fn near_free_work_earns_next_to_no_reputation_and_a_fault_always_costs_in_full() {
    let base = MemState::new();
    let mut fork = Overlay::new(&base);
    ReputationGenesis {
        params: ReputationParams::default(),
    }
    .apply(&mut fork)
    .unwrap();
    let (farmer, worker) = (Address([1; 20]), Address([2; 20]));
    // 45 self-orders at 1 ugpu each: the farm that used to reach 0.95.
    for h in 1..=45 {
        fork.record_outcome(&farmer, h, Outcome::Accepted, 1)
            .unwrap();
    }
    assert_eq!(
        fork.score(&farmer, 45),
        NEUTRAL_PPM,
        "1 ugpu of work counts for nothing"
    );
    // One real job counts as it did; half the full-credit price counts half.
    fork.record_outcome(&worker, 1, Outcome::Accepted, GPU)
        .unwrap();
    assert_eq!(fork.score(&worker, 1), 525_000);
    let half = Address([3; 20]);
    fork.record_outcome(&half, 1, Outcome::Accepted, GPU / 2)
        .unwrap();
    assert_eq!(fork.score(&half, 1), 512_500);
    // A fault on 1 ugpu of work costs as much as on a dear job.
    fork.record_outcome(&farmer, 46, Outcome::Fault, 1).unwrap();
    assert_eq!(fork.score(&farmer, 46), 250_000);
}
