//! Command-line interface: one file per subcommand.

mod probe;
mod run_job;

use clap::{Parser, Subcommand, ValueEnum};

/// gpuchain provider agent.
#[derive(Debug, Parser)]
#[command(name = "gpuchain-provider", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Output format of commands that report something.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Output {
    /// Human-readable table.
    Text,
    /// JSON on stdout.
    Json,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Describe GPUs (model, count, memory, driver, CUDA, compute capability, utilisation) and CPU.
    Probe(probe::ProbeArgs),
    /// Run a job spec (JSON) locally, without a chain.
    RunJob(run_job::RunJobArgs),
}

impl Command {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        match self {
            Command::Probe(a) => probe::run(a),
            Command::RunJob(a) => run_job::run(a),
        }
    }
}
