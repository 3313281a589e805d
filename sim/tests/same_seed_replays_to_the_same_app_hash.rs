//! Determinism: one seed run twice, each on a fresh RocksDB, gives the same app hash at every
//! height; a different seed gives a different history.

use gpuchain_sim::{run, Config};

#[test]
fn same_seed_replays_to_the_same_app_hash() {
    let config = Config {
        replay_check: true,
        ..Config::new(42, 150)
    };
    let report = run(&config).unwrap_or_else(|f| panic!("{f}"));
    assert!(report.replayed);
    let other = run(&Config::new(43, 150)).unwrap_or_else(|f| panic!("{f}"));
    assert_ne!(report.app_hash, other.app_hash, "seeds 42 and 43 diverge");
}
