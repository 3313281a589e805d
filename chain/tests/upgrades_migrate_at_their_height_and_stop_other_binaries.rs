//! A planned upgrade in process: validators signal a plan, the binary without its migration
//! halts at the height (and refuses to start there), the release that registers it runs
//! the migration before the block's transactions, which see the new rule; a release started
//! before the height and an old one started after it both refuse to run.

mod common;

use common::*;
use gpuchain_chain::app::{Migration, Upgrades};
use gpuchain_chain::{state_key, App, BlockOutcome};
use gpuchain_staking::GenesisValidator;
use gpuchain_tx::build_signed_tx;
use gpuchain_tx::{Msg, TxParams};
use gpuchain_types::{AppError, BlockCtx, StateReadExt, StateWrite, StateWriteExt};
use gpuchain_upgrade::{MsgSignalUpgrade, UpgradeMsg, UpgradeRead};

const PLAN_HEIGHT: u64 = 15;

fn memo_1k(state: &mut dyn StateWrite, _ctx: &BlockCtx) -> Result<(), AppError> {
    let mut params: TxParams = state.get(state_key::tx_params()).unwrap_or_default();
    params.max_memo_bytes = 1_024;
    state.put(state_key::tx_params().to_string(), &params);
    Ok(())
}

fn next_release() -> Upgrades {
    Upgrades::new()
        .register(Migration {
            name: "memo-1k",
            run: memo_1k,
        })
        .unwrap()
}

fn signal(from: u32, nonce: u64) -> Vec<u8> {
    let msgs = vec![Msg::Upgrade(UpgradeMsg::Signal(MsgSignalUpgrade {
        name: "memo-1k".into(),
        height: PLAN_HEIGHT,
    }))];
    build_signed_tx(&key(from), CHAIN_ID, nonce, &TxParams::default(), msgs, "").encode()
}

fn long_memo_transfer(from: u32, nonce: u64) -> Vec<u8> {
    let msgs = vec![Msg::Bank(gpuchain_bank::BankMsg::Send(
        gpuchain_bank::MsgSend {
            to: address(9),
            amount: 1,
        },
    ))];
    let params = TxParams {
        max_memo_bytes: 1_024,
        ..TxParams::default()
    };
    build_signed_tx(&key(from), CHAIN_ID, nonce, &params, msgs, &"m".repeat(600)).encode()
}

fn block(app: &App, height: u64, txs: &[Vec<u8>]) -> anyhow::Result<BlockOutcome> {
    let refs: Vec<&[u8]> = txs.iter().map(Vec::as_slice).collect();
    let hash = blake3::hash(&height.to_le_bytes());
    let (outcome, _) = app.finalize(&block_input(height, hash.as_bytes(), &refs))?;
    app.commit()?;
    Ok(outcome)
}

fn error_of<T>(result: anyhow::Result<T>) -> String {
    match result {
        Ok(_) => panic!("expected an error"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn upgrades_migrate_at_their_height_and_stop_other_binaries() {
    let mut g = genesis(3, 1_000_000_000);
    for i in 0..3u32 {
        g.staking.validators.push(GenesisValidator {
            operator: address(i),
            consensus_pubkey: key(10 + i).verifying_key().to_bytes(),
            moniker: format!("v{i}"),
            self_bond: 100_000_000,
        });
    }
    let dir = tempfile::tempdir().unwrap();
    let app = open(dir.path(), &g);
    block(&app, 1, &[]).unwrap();

    // Two of three equal validators are not more than two thirds.
    let out = block(&app, 2, &[signal(0, 0), signal(1, 0)]).unwrap();
    assert!(
        out.tx_results.iter().all(|r| r.code == 0),
        "{:?}",
        out.tx_results
    );
    assert_eq!(app.read_committed(|s| s.upgrade_plan()), None);
    let out = block(&app, 3, &[signal(2, 0), long_memo_transfer(0, 1)]).unwrap();
    assert_eq!(out.tx_results[0].code, 0);
    assert!(out.tx_results[0]
        .events
        .iter()
        .any(|e| e.kind == "upgrade.scheduled"));
    assert_ne!(
        out.tx_results[1].code, 0,
        "a 600-byte memo is too long before"
    );
    assert_eq!(
        app.read_committed(|s| s.upgrade_plan()).map(|p| p.height),
        Some(PLAN_HEIGHT)
    );

    // The new release started early refuses: it would run new code on old blocks.
    drop(app);
    let early = error_of(App::open(dir.path()).unwrap().with_upgrades(next_release()));
    assert!(early.contains("run the previous release"), "{early}");
    let app = App::open(dir.path())
        .unwrap()
        .with_upgrades(Upgrades::new())
        .unwrap();
    for h in 4..PLAN_HEIGHT {
        block(&app, h, &[]).unwrap();
    }

    // At the height the old binary will not execute the block, and will not start.
    let halted = error_of(block(&app, PLAN_HEIGHT, &[]));
    assert!(
        halted.contains("UPGRADE \"memo-1k\" NEEDED at height 15"),
        "{halted}"
    );
    drop(app);
    let restart = error_of(
        App::open(dir.path())
            .unwrap()
            .with_upgrades(Upgrades::new()),
    );
    assert!(restart.contains("NEEDED"), "{restart}");

    // The release that registers it migrates, and the block's transactions see the change.
    let app = App::open(dir.path())
        .unwrap()
        .with_upgrades(next_release())
        .unwrap();
    let out = block(&app, PLAN_HEIGHT, &[long_memo_transfer(0, 1)]).unwrap();
    assert!(out.events.iter().any(|e| e.kind == "upgrade.applied"));
    assert_eq!(out.tx_results[0].code, 0, "{:?}", out.tx_results[0].log);
    let applied = app.read_committed(|s| s.applied_upgrades());
    assert_eq!(applied.len(), 1);
    assert_eq!(applied[0].height, PLAN_HEIGHT);
    assert_eq!(app.read_committed(|s| s.upgrade_plan()), None);
    block(&app, PLAN_HEIGHT + 1, &[]).unwrap();

    // The old binary refuses the upgraded state.
    drop(app);
    let old = error_of(
        App::open(dir.path())
            .unwrap()
            .with_upgrades(Upgrades::new()),
    );
    assert!(
        old.contains("upgraded by \"memo-1k\" at height 15"),
        "{old}"
    );
}

#[test]
fn a_release_cannot_register_one_name_twice() {
    let twice = next_release().register(Migration {
        name: "memo-1k",
        run: memo_1k,
    });
    assert!(twice.is_err());
    let bad = Upgrades::new().register(Migration {
        name: "Memo 1k",
        run: memo_1k,
    });
    assert!(bad.is_err());
}
