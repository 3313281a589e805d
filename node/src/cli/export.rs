//! `gpuchaind export`: a committed height's whole state as the genesis.json of a new chain
//! that continues from it.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::AppConfig;
use anyhow::{Context, Result};
use gpuchain_chain::Store;
use gpuchain_genesis::{exported_genesis_json, genesis_validator_entry};
use serde_json::json;

use super::{Cli, Output};

#[derive(clap::Args)]
pub(crate) struct ExportArgs {
    /// Height to export: the latest committed one by default, or any older height the node
    /// still keeps (`proof_heights` in app.toml).
    #[arg(long)]
    height: Option<u64>,
    /// Where to write the new genesis.json; `-` (the default) prints it.
    #[arg(long, default_value = "-")]
    output_document: PathBuf,
    /// The running chain's genesis.json, whose genesis time and consensus parameters the new
    /// one keeps; by default `<home>/../cometbft/config/genesis.json` (the localnet layout).
    #[arg(long)]
    genesis: Option<PathBuf>,
}

pub(crate) fn run(cli: &Cli, args: &ExportArgs, out: &Output) -> Result<ExitCode> {
    let config = AppConfig::load(&cli.home)?;
    let scratch = tempfile::tempdir()?;
    let store = Store::open_reader(&config.db_dir(&cli.home), scratch.path())?;
    let height = args.height.unwrap_or(store.height());
    let (app_state, validators) = gpuchain_chain::app::export(&store, height)?;
    let exported = app_state
        .exported
        .as_ref()
        .context("export produced no state")?;
    let source_path = args.genesis.clone().unwrap_or_else(|| {
        cli.home
            .join("..")
            .join("cometbft")
            .join("config")
            .join("genesis.json")
    });
    let source: serde_json::Value = match std::fs::read(&source_path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .with_context(|| format!("parsing {}", source_path.display()))?,
        Err(_) if args.genesis.is_none() => json!({}),
        Err(e) => return Err(e).with_context(|| format!("reading {}", source_path.display())),
    };
    let chain_id = cli.chain_id.clone().unwrap_or(exported.chain_id.clone());
    let entries = validators
        .iter()
        .map(|(pubkey, power, moniker)| genesis_validator_entry(pubkey, *power, moniker))
        .collect();
    let doc = exported_genesis_json(&source, &chain_id, entries, &app_state)?;
    let text = serde_json::to_string_pretty(&doc)? + "\n";
    if args.output_document.as_os_str() == "-" {
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    std::fs::write(&args.output_document, text)
        .with_context(|| format!("writing {}", args.output_document.display()))?;
    let summary = json!({
        "height": height,
        "app_hash": hex::encode(exported.app_hash),
        "keys": exported.state.len(),
        "validators": validators.len(),
        "chain_id": chain_id,
        "output": args.output_document.display().to_string(),
    });
    out.print(&summary, || {
        format!(
            "exported height {height} (app hash {}, {} keys, {} validators) to {} for chain {chain_id}; \
             it starts at height {}",
            hex::encode(exported.app_hash),
            exported.state.len(),
            validators.len(),
            args.output_document.display(),
            height + 1
        )
    });
    Ok(ExitCode::SUCCESS)
}
