//! Command-line interface: one file per subcommand.

mod chat;
mod init;
mod probe;
mod run;
mod run_job;
mod stake;
mod status;

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use gpuchain_agent_kit::cli::GlobalArgs;
pub(crate) use gpuchain_agent_kit::cli::Output;

/// gpuchain provider agent.
#[derive(Debug, Parser)]
#[command(name = "gpuchain-provider", version, about)]
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
        env = "GPUCHAIN_PROVIDER_CONFIG",
        default_value = "provider.toml"
    )]
    pub(crate) config: PathBuf,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Describe GPUs (model, count, memory, driver, CUDA, compute capability, utilisation) and CPU.
    Probe(probe::ProbeArgs),
    /// Run a job spec (JSON) locally, without a chain.
    RunJob(run_job::RunJobArgs),
    /// Ask a GGUF chat model (e.g. SmolLM2-135M-Instruct) one question locally.
    Chat(chat::ChatArgs),
    /// Keep a GGUF chat model loaded behind an OpenAI-compatible HTTP endpoint.
    ServeModel(crate::serve::ServeArgs),
    /// Write a configuration file (key, endpoint, pricing, capacity).
    Init(init::InitArgs),
    /// Register this machine as a provider (probed hardware + bond), or update its attributes.
    Register(stake::RegisterArgs),
    /// Bond more stake.
    Bond(stake::AmountArgs),
    /// Start unbonding stake (returned after the unbonding period).
    Unbond(stake::AmountArgs),
    /// Leave the market and withdraw the whole bond (after the unbonding period).
    Withdraw(stake::WithdrawArgs),
    /// Run the agent: bid, execute, commit, reveal, get paid.
    Run(run::RunArgs),
    /// Show the agent's bids, leases, counters and on-chain account.
    Status(status::StatusArgs),
}

impl Command {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        match self {
            Command::Probe(a) => probe::run(a),
            Command::RunJob(a) => run_job::run(a),
            Command::Chat(a) => chat::run(a),
            Command::ServeModel(a) => crate::serve::run(a),
            Command::Init(a) => init::run(a),
            other => gpuchain_agent_kit::cli::block_on(async move {
                match other {
                    Command::Register(a) => stake::register(a).await,
                    Command::Bond(a) => stake::bond(a).await,
                    Command::Unbond(a) => stake::unbond(a).await,
                    Command::Withdraw(a) => stake::withdraw(a).await,
                    Command::Run(a) => run::run(a).await,
                    Command::Status(a) => status::run(a).await,
                    Command::Probe(_)
                    | Command::RunJob(_)
                    | Command::ServeModel(_)
                    | Command::Chat(_)
                    | Command::Init(_) => Ok(()),
                }
            }),
        }
    }
}
