use std::path::Path;
use std::process::ExitCode;

use crate::config::AppConfig;
use crate::metrics::MeteredApp;
use anyhow::{Context, Result};
use gpuchain_chain::app::Upgrades;
use gpuchain_chain::App;

use super::Cli;

#[derive(clap::Args)]
pub(crate) struct StartArgs {
    /// Override app.toml's ABCI listen address.
    #[arg(long)]
    abci_addr: Option<String>,
}

pub(crate) fn run(cli: &Cli, args: &StartArgs, upgrades: Upgrades) -> Result<ExitCode> {
    init_logging();
    let (app, config) = open(&cli.home, upgrades)?;
    let addr = args.abci_addr.clone().unwrap_or(config.abci_addr.clone());
    let listener = std::net::TcpListener::bind(&addr)
        .with_context(|| format!("binding ABCI server to {addr}"))?;
    tracing::info!(%addr, "ABCI server listening; start CometBFT with proxy_app=tcp://{addr}");
    crate::abci_server::serve(listener, app).context("ABCI server stopped")?;
    Ok(ExitCode::SUCCESS)
}

/// Logs to stderr at `RUST_LOG`'s level (default `info`); a second call changes nothing.
pub(crate) fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .try_init();
}

/// Opens the app that `home`'s app.toml describes, with its metrics server when one is
/// configured: what a node serves, whether over the ABCI socket or inside CometBFT's
/// process.
pub(crate) fn open(home: &Path, upgrades: Upgrades) -> Result<(MeteredApp, AppConfig)> {
    let config = AppConfig::load(home)?;
    let db_dir = config.db_dir(home);
    let app = MeteredApp::new(
        App::open_with_proof_window(&db_dir, config.proof_window())?
            .with_snapshots(config.snapshot_policy(home))
            .with_block_retention(config.min_retain_blocks)
            .with_event_index(config.event_index())
            .with_upgrades(upgrades)?,
        &db_dir,
    );
    if let Some(listen) = &config.metrics_listen {
        serve_metrics(listen, app.render())?;
    }
    Ok((app, config))
}

/// Serves `render` at `GET /metrics` on `listen` from a thread of its own.
fn serve_metrics(listen: &str, render: gpuchain_agent_kit::metrics::Render) -> Result<()> {
    let addr: std::net::SocketAddr = listen
        .parse()
        .with_context(|| format!("metrics_listen {listen:?} is not an address"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let bound = runtime
        .block_on(gpuchain_agent_kit::metrics::serve(addr, render))
        .with_context(|| format!("binding the metrics server to {addr}"))?;
    tracing::info!(%bound, "Prometheus metrics at /metrics");
    std::thread::spawn(move || runtime.block_on(std::future::pending::<()>()));
    Ok(())
}
