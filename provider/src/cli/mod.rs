//! Command-line interface: one file per subcommand.

mod chat;
mod init;
mod probe;
mod run;
mod run_job;
mod stake;
mod status;

use clap::Subcommand;
use gpuchain_agent_kit::args::{AmountArgs, BasicArgs};
use gpuchain_agent_kit::cli::block_on;
pub(crate) use gpuchain_agent_kit::cli::Output;

use crate::config::Config;

/// `--config`, the provider's configuration file.
pub(crate) type ConfigArg = gpuchain_agent_kit::args::ConfigArg<Config>;

/// gpuchain provider agent: its subcommands.
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
    Bond(AmountArgs<Config>),
    /// Start unbonding stake (returned after the unbonding period).
    Unbond(AmountArgs<Config>),
    /// Leave the market and withdraw the whole bond (after the unbonding period).
    Withdraw(stake::WithdrawArgs),
    /// Run the agent: bid, execute, commit, reveal, get paid.
    Run(run::RunArgs),
    /// Show the agent's bids, leases, counters and on-chain account.
    Status(BasicArgs<Config>),
}

impl Command {
    /// Runs the command; those that talk to the chain run on the agents' runtime.
    pub(crate) fn run(self) -> anyhow::Result<()> {
        match self {
            Command::Probe(a) => probe::run(a),
            Command::RunJob(a) => run_job::run(a),
            Command::Chat(a) => chat::run(a),
            Command::ServeModel(a) => crate::serve::run(a),
            Command::Init(a) => init::run(a),
            Command::Register(a) => block_on(stake::register(a)),
            Command::Bond(a) => block_on(stake::bond(a)),
            Command::Unbond(a) => block_on(stake::unbond(a)),
            Command::Withdraw(a) => block_on(stake::withdraw(a)),
            Command::Run(a) => block_on(run::run(a)),
            Command::Status(a) => block_on(status::run(a)),
        }
    }
}
