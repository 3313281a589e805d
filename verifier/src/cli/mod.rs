//! Command-line interface: one file per subcommand.

mod init;
mod run;
mod stake;
mod status;

use clap::Subcommand;
use gpuchain_agent_kit::args::{AmountArgs, BasicArgs};
use gpuchain_agent_kit::cli::block_on;

use crate::config::Config;

/// `--config`, the verifier's configuration file.
pub(crate) type ConfigArg = gpuchain_agent_kit::args::ConfigArg<Config>;

/// gpuchain verifier agent: its subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Write a configuration file (key, node, data dir, backend, challenges).
    Init(init::InitArgs),
    /// Register as a verifier with a bond.
    Register(stake::RegisterArgs),
    /// Bond more stake.
    Bond(AmountArgs<Config>),
    /// Start unbonding stake (paid out after the unbonding period).
    Unbond(AmountArgs<Config>),
    /// Run the agent: take assignments, re-execute, post verdicts, plant ringers.
    Run(run::RunArgs),
    /// Show the agent's cases, ringers, counters and on-chain verifier record.
    Status(BasicArgs<Config>),
}

impl Command {
    /// Runs the command; all but `init` talk to the chain, on the agents' runtime.
    pub(crate) fn run(self) -> anyhow::Result<()> {
        match self {
            Command::Register(a) => block_on(stake::register(a)),
            Command::Bond(a) => block_on(stake::bond(a)),
            Command::Unbond(a) => block_on(stake::unbond(a)),
            Command::Run(a) => block_on(run::run(a)),
            Command::Status(a) => block_on(status::run(a)),
            Command::Init(a) => init::run(a),
        }
    }
}
