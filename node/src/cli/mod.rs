//! Command-line interface, Cosmos-style: `gpuchaind [--home] [--node] [--chain-id]
//! [--output json] <command>`.

mod export;
mod keys;
mod light;
mod output;
mod query;
mod query_auction;
mod query_staking;
mod serving;
pub(crate) mod start;
mod status;
mod testnet;
mod tx;
mod tx_auction;
mod tx_staking;
mod upgrade;
mod verify;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub(crate) use output::{Output, OutputFormat};

/// gpuchain: a verified GPU compute market on CometBFT.
#[derive(Parser)]
#[command(name = "gpuchaind", version, about)]
pub(crate) struct Cli {
    /// Home directory: app.toml, state, and keys/.
    #[arg(long, global = true, env = "GPUCHAIN_HOME", default_value_os_t = default_home())]
    pub(crate) home: PathBuf,
    /// CometBFT RPC endpoint of the node to talk to.
    #[arg(
        long,
        global = true,
        env = "GPUCHAIN_NODE",
        default_value = "http://127.0.0.1:26657"
    )]
    pub(crate) node: String,
    /// Chain id to sign for; by default the node's.
    #[arg(long, global = true)]
    pub(crate) chain_id: Option<String>,
    /// Output format.
    #[arg(long, global = true, value_enum, default_value_t = OutputFormat::Text)]
    pub(crate) output: OutputFormat,
    #[command(subcommand)]
    command: Command,
}

fn default_home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default()
        .join(".gpuchain")
}

#[derive(Subcommand)]
enum Command {
    /// Run the ABCI application (CometBFT connects to it).
    Start(start::StartArgs),
    /// Write a localnet: N validator homes on 127.0.0.1 ports, genesis and funded keys.
    Testnet(testnet::TestnetArgs),
    /// Manage keys in <home>/keys.
    #[command(subcommand)]
    Keys(keys::KeysCmd),
    /// Sign and broadcast a transaction, then wait for its block.
    #[command(subcommand)]
    Tx(tx::TxCmd),
    /// Query chain state.
    #[command(subcommand)]
    Query(query::QueryCmd),
    /// Show the node's height, app hash and chain id.
    Status,
    /// The light client that checks the headers behind proven queries.
    #[command(subcommand)]
    Light(light::LightCmd),
    /// Write a committed height's whole state as the genesis.json of a chain continuing it.
    Export(export::ExportArgs),
    /// List the upgrade migrations this binary registers (docs/operations.md).
    Migrations,
}

/// Parses the command line, runs the command, and maps errors to exit code 1. `upgrades`
/// are the migrations this release registers.
pub fn run(upgrades: gpuchain_chain::app::Upgrades) -> ExitCode {
    let cli = Cli::parse();
    let out = Output::new(cli.output);
    let result = match &cli.command {
        Command::Start(args) => start::run(&cli, args, upgrades),
        Command::Migrations => {
            let names = upgrades.names();
            out.print(&names, || names.join("\n"));
            Ok(ExitCode::SUCCESS)
        }
        Command::Testnet(args) => testnet::run(args, &out),
        Command::Keys(cmd) => keys::run(&cli, cmd, &out),
        Command::Tx(cmd) => runtime().and_then(|rt| rt.block_on(tx::run(&cli, cmd, &out))),
        Command::Query(cmd) => runtime().and_then(|rt| rt.block_on(query::run(&cli, cmd, &out))),
        Command::Status => runtime().and_then(|rt| rt.block_on(status::run(&cli, &out))),
        Command::Export(args) => export::run(&cli, args, &out),
        Command::Light(cmd) => runtime()
            .and_then(|rt| rt.block_on(light::run(&cli, cmd, &out)))
            .map(|()| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}
