//! Genesis in both directions: the writes InitChain applies (typed module sections, or a
//! whole exported state), and the export of a committed height.

use anyhow::{anyhow, ensure, Context, Result};
use gpuchain_genesis::{AppGenesis, ExportedState};
use gpuchain_staking::{StakingRead, ValidatorUpdate};
use gpuchain_types::{Overlay, StateRead, StateReadExt, StateWrite, StateWriteExt, Write};

use super::modules::MODULES;
use crate::state_key;
use crate::store::Store;

/// The writes of genesis and the starting validator set.
pub(super) fn genesis_writes(
    base: &dyn StateRead,
    chain_id: &str,
    initial_height: u64,
    genesis: &AppGenesis,
) -> Result<(Write, Vec<ValidatorUpdate>)> {
    let mut fork = Overlay::new(base);
    let validators = match &genesis.exported {
        Some(exported) => imported(&mut fork, chain_id, initial_height, genesis, exported)?,
        None => {
            ensure!(
                initial_height == 1,
                "genesis.json starts at height {initial_height}, which needs an exported \
                 state (`gpuchaind export`) in app_state"
            );
            typed(&mut fork, chain_id, genesis)?
        }
    };
    let (writes, _) = fork.into_parts();
    Ok((writes, validators))
}

fn typed(
    fork: &mut Overlay<'_>,
    chain_id: &str,
    genesis: &AppGenesis,
) -> Result<Vec<ValidatorUpdate>> {
    fork.put(state_key::chain_id().to_string(), &chain_id.to_string());
    fork.put(state_key::tx_params().to_string(), &genesis.tx);
    let mut validators = Vec::new();
    for module in &MODULES {
        let set =
            (module.genesis)(fork, genesis).map_err(|e| anyhow!("{} genesis: {e}", module.name))?;
        validators.extend(set);
    }
    Ok(validators)
}

/// An exported state, written as it was; only the chain id is the new chain's. Under the
/// same chain id it must reproduce the exported app hash, so an edited file is refused.
fn imported(
    fork: &mut Overlay<'_>,
    chain_id: &str,
    initial_height: u64,
    genesis: &AppGenesis,
    exported: &ExportedState,
) -> Result<Vec<ValidatorUpdate>> {
    let sections = AppGenesis {
        exported: None,
        ..genesis.clone()
    };
    ensure!(
        sections == AppGenesis::default(),
        "an exported state is the whole state: app_state's other sections must be empty"
    );
    ensure!(
        exported.height.checked_add(1) == Some(initial_height),
        "the state was exported at height {} but genesis.json's initial_height is {} \
         (it must be one more)",
        exported.height,
        initial_height
    );
    for (key, value) in exported.entries().map_err(|e| anyhow!(e))? {
        fork.put_raw(key, value);
    }
    fork.put(state_key::chain_id().to_string(), &chain_id.to_string());
    let validators: Vec<ValidatorUpdate> = fork
        .active_set()
        .into_iter()
        .map(|v| ValidatorUpdate {
            pubkey: v.pubkey,
            power: v.power,
        })
        .collect();
    ensure!(
        !validators.is_empty(),
        "the exported state has no active validators"
    );
    Ok(validators)
}

/// A validator of an exported state: consensus key, power and moniker.
pub type ExportedValidator = ([u8; 32], u64, String);

/// The whole state of committed height `height` as a genesis document's `app_state`, and
/// the validators it makes active.
pub fn export(store: &Store, height: u64) -> Result<(AppGenesis, Vec<ExportedValidator>)> {
    let entries = store.state_at(height)?;
    let mut state = gpuchain_types::MemState::new();
    state.apply(
        entries
            .iter()
            .map(|(k, v)| (k.clone(), Some(v.clone())))
            .collect(),
    );
    let chain_id: String = state
        .get(state_key::chain_id())
        .context("the state has no chain id")?;
    let app_hash = store.root_at(height)?;
    let validators = state
        .active_set()
        .into_iter()
        .map(|v| {
            let moniker = state
                .validator(&v.operator)
                .map(|val| val.moniker)
                .unwrap_or_default();
            (v.pubkey, v.power, moniker)
        })
        .collect();
    let genesis = AppGenesis {
        exported: Some(ExportedState::from_entries(
            height, &chain_id, app_hash, &entries,
        )),
        ..AppGenesis::default()
    };
    Ok((genesis, validators))
}
