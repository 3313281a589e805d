//! `gpuchaind light trust|status`: the light client behind `--prove`. Proven queries check
//! the Merkle proof against the app hash of a header that the trusted validators signed;
//! `trust` pins the starting header instead of trusting the node on first use.

use anyhow::Result;
use gpuchain_client::{ChainClient, LightClient};

use super::{Cli, Output};

#[derive(clap::Subcommand)]
pub(crate) enum LightCmd {
    /// Pin trust to the header at `height` with `hash` (hex, e.g. from another node).
    Trust {
        /// Block height.
        #[arg(long)]
        height: u64,
        /// Header hash (hex).
        #[arg(long)]
        hash: String,
    },
    /// Show the trusted header.
    Status,
}

/// A client whose proven queries go through the light client of `cli`'s home and chain.
pub(crate) async fn proving_client(cli: &Cli) -> Result<ChainClient> {
    let client = ChainClient::new(&cli.node)?;
    let chain_id = match &cli.chain_id {
        Some(id) => id.clone(),
        None => client.chain_id().await?,
    };
    let light = LightClient::open(LightClient::store_path(&cli.home, &chain_id))?;
    Ok(client.with_light_client(light))
}

pub(crate) async fn run(cli: &Cli, cmd: &LightCmd, out: &Output) -> Result<()> {
    let client = ChainClient::new(&cli.node)?;
    let chain_id = match &cli.chain_id {
        Some(id) => id.clone(),
        None => client.chain_id().await?,
    };
    let path = LightClient::store_path(&cli.home, &chain_id);
    let mut light = LightClient::open(&path)?;
    if let LightCmd::Trust { height, hash } = cmd {
        light.trust(&client, *height, hash).await?;
    }
    let value = serde_json::json!({
        "chain_id": chain_id,
        "trusted_height": light.trusted_height(),
        "store": path,
        "trusting_period_secs": light.trusting_period().as_secs(),
    });
    out.print(&value, || match light.trusted_height() {
        Some(h) => format!("trusting {chain_id} at height {h} ({})", path.display()),
        None => {
            format!("no trusted header yet for {chain_id}; the first proven query trusts the node")
        }
    });
    Ok(())
}
