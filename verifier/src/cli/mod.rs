//! Command-line interface: one file per subcommand.

mod init;
mod run;
mod stake;
mod status;

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// gpuchain verifier agent.
#[derive(Debug, Parser)]
#[command(name = "gpuchain-verifier", version, about)]
pub(crate) struct Cli {
    /// Log format on stderr.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "text",
        env = "GPUCHAIN_LOG_FORMAT"
    )]
    pub(crate) log_format: LogFormat,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Log format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Output format of commands that report something.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Output {
    /// Human-readable text.
    Text,
    /// JSON on stdout.
    Json,
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
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        runtime.block_on(async move {
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
