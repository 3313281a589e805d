//! Duplicate-vote evidence delivered in FinalizeBlock slashes the validator's bond by
//! `double_sign_slash_ppm`, tombstones it, and removes it from CometBFT's set.

mod common;

use common::*;
use gpuchain_chain::BlockInput;
use gpuchain_slashing::{Evidence, EvidenceKind};
use gpuchain_staking::{consensus_address, GenesisValidator, StakingRead};

#[test]
fn double_sign_evidence_slashes_and_tombstones() {
    let mut g = genesis(3, 1_000_000_000);
    let cons_keys: Vec<[u8; 32]> = (10..13)
        .map(|i| key(i).verifying_key().to_bytes())
        .collect();
    for (i, pk) in cons_keys.iter().enumerate() {
        g.staking.validators.push(GenesisValidator {
            operator: address(i as u32),
            consensus_pubkey: *pk,
            moniker: format!("v{i}"),
            self_bond: 100_000_000,
        });
    }
    let dir = tempfile::tempdir().unwrap();
    let app = open(dir.path(), &g);
    run_block(&app, 1, &[]);

    let offender = consensus_address(&cons_keys[1]);
    let evidence = [Evidence {
        kind: EvidenceKind::DuplicateVote,
        consensus_address: offender,
        height: 1,
    }];
    let hash = blake3::hash(b"2");
    let input = BlockInput {
        height: 2,
        hash: hash.as_bytes(),
        time_ms: 2_000,
        txs: &[],
        misbehavior: &evidence,
        votes: &[],
    };
    let (outcome, _) = app.finalize(&input).unwrap();
    app.commit().unwrap();

    let removed: Vec<_> = outcome
        .validator_updates
        .iter()
        .filter(|u| u.power == 0)
        .collect();
    assert_eq!(removed.len(), 1, "{:?}", outcome.validator_updates);
    assert_eq!(removed[0].pubkey, cons_keys[1]);
    drop(app);
    let store = gpuchain_chain::Store::open(dir.path()).unwrap();
    let v = store.validator(&address(1)).unwrap();
    assert!(v.tombstoned && v.jailed);
    assert_eq!(v.bonded, 95_000_000, "5% slashed");
}
