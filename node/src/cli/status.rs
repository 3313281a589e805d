use std::process::ExitCode;

use anyhow::Result;
use gpuchain_client::ChainClient;
use serde_json::json;

use super::{Cli, Output};

pub(crate) async fn run(cli: &Cli, out: &Output) -> Result<ExitCode> {
    let client = ChainClient::new(&cli.node)?;
    let s = client.status().await?;
    let value = json!({
        "chain_id": s.node_info.network.to_string(),
        "moniker": s.node_info.moniker.to_string(),
        "latest_block_height": s.sync_info.latest_block_height.value(),
        "latest_app_hash": s.sync_info.latest_app_hash.to_string(),
        "catching_up": s.sync_info.catching_up,
        "voting_power": s.validator_info.power.value(),
    });
    out.print(&value, || {
        format!(
            "{} {} height {} app hash {}{}",
            s.node_info.network,
            s.node_info.moniker,
            s.sync_info.latest_block_height,
            s.sync_info.latest_app_hash,
            if s.sync_info.catching_up {
                " (catching up)"
            } else {
                ""
            }
        )
    });
    Ok(ExitCode::SUCCESS)
}
