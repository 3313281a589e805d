//! Command-line interface: one file per subcommand.

mod init;
mod run;
mod stake;
mod status;

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use gpuchain_agent_kit::cli::GlobalArgs;
pub(crate) use gpuchain_agent_kit::cli::Output;

/// gpuchain verifier agent.
#[derive(Debug, Parser)]
#[command(name = "gpuchain-verifier", version, about)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: GlobalArgs,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// `--config` shared by the chain-facing commands.
#[derive(Debug, clap::Args)]
pub(crate) struct ConfigArg {
    /// Agent configuration file (written by `init`).
    #[arg(
        long,
        env = "GPUCHAIN_VERIFIER_CONFIG",
        default_value = "verifier.toml"
    )]
    pub(crate) config: PathBuf,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Write a configuration file (key, node, data dir, backend, challenges).
    Init(init::InitArgs),
    /// Register as a verifier with a bond.
    Register(stake::RegisterArgs),
    /// Bond more stake.
    Bond(stake::AmountArgs),
    /// Start unbonding stake (paid out after the unbonding period).
    Unbond(stake::AmountArgs),
    /// Run the agent: take assignments, re-execute, post verdicts, plant ringers.
    Run(run::RunArgs),
    /// Show the agent's cases, ringers, counters and on-chain verifier record.
    Status(status::StatusArgs),
}

impl Command {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        if let Command::Init(a) = self {
            return init::run(a);
        }
        gpuchain_agent_kit::cli::block_on(async move {
            match self {
                Command::Register(a) => stake::register(a).await,
                Command::Bond(a) => stake::bond(a).await,
                Command::Unbond(a) => stake::unbond(a).await,
                Command::Run(a) => run::run(a).await,
                Command::Status(a) => status::run(a).await,
                Command::Init(_) => Ok(()),
            }
        })
    }
}
