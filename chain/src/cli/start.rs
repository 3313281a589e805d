use std::process::ExitCode;

use anyhow::{Context, Result};
use gpuchain_chain::config::AppConfig;
use gpuchain_chain::App;

use super::Cli;

#[derive(clap::Args)]
pub(crate) struct StartArgs {
    /// Override app.toml's ABCI listen address.
    #[arg(long)]
    abci_addr: Option<String>,
}

pub(crate) fn run(cli: &Cli, args: &StartArgs) -> Result<ExitCode> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let config = AppConfig::load(&cli.home)?;
    let addr = args.abci_addr.clone().unwrap_or(config.abci_addr.clone());
    let app = App::open_with_proof_window(&config.db_dir(&cli.home), config.proof_window())?;
    let server = tendermint_abci::ServerBuilder::new(1 << 20)
        .bind(&addr, app)
        .with_context(|| format!("binding ABCI server to {addr}"))?;
    tracing::info!(%addr, "ABCI server listening; start CometBFT with proxy_app=tcp://{addr}");
    server.listen().context("ABCI server stopped")?;
    Ok(ExitCode::SUCCESS)
}
