//! The next release of `gpuchaind`, as an operator installs it at an upgrade height: the
//! same node and command line, registering one more migration, `memo-1k`, which raises the
//! longest transaction memo from 256 to 1,024 bytes. The localnet upgrade test
//! (tests/tests/a_signalled_upgrade_halts_old_binaries_and_migrates_at_its_height.rs)
//! schedules it, watches every `gpuchaind` halt at the height, swaps them for this binary,
//! and checks the chain carries on with the new rule.

use gpuchain_chain::app::{released, Migration, Upgrades};
use gpuchain_chain::state_key;
use gpuchain_tx::TxParams;
use gpuchain_types::{AppError, BlockCtx, StateReadExt, StateWrite, StateWriteExt};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Longest memo after the upgrade.
const MEMO_BYTES: u32 = 1_024;

fn memo_1k(state: &mut dyn StateWrite, _ctx: &BlockCtx) -> Result<(), AppError> {
    let mut params: TxParams = state.get(state_key::tx_params()).unwrap_or_default();
    params.max_memo_bytes = params.max_memo_bytes.max(MEMO_BYTES);
    state.put(state_key::tx_params().to_string(), &params);
    Ok(())
}

fn upgrades() -> anyhow::Result<Upgrades> {
    released().register(Migration {
        name: "memo-1k",
        run: memo_1k,
    })
}

fn main() -> std::process::ExitCode {
    match upgrades() {
        Ok(upgrades) => gpuchain_node::cli::run(upgrades),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
