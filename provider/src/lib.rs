//! `gpuchain-provider`: the agent a GPU owner runs.
//!
//! `probe` describes the machine (GPUs through NVML; without NVML it is CPU-only), `run-job`
//! runs a job spec locally, `init` writes a configuration file, `register`/`bond`/`unbond`/
//! `withdraw` manage the provider's registration and stake with signed transactions, `run`
//! is the daemon (follow blocks, bid, execute, commit, reveal, get paid; Prometheus
//! metrics; durable local state) and `status` shows what it is doing.
//!
//! The library is the program; `src/main.rs` only calls [`run_cli`]. It is a library so
//! that the end-to-end test crate can enable its `test-hooks` feature (the dishonest test
//! modes), which a release build of the binary alone never has.

mod agent;
mod attrs;
mod chain;
mod cli;
mod config;
mod dishonest;
mod eligibility;
mod metrics;
mod pricing;
mod serve;
mod state;
/// The agents' atomic JSON state file (from the agent kit).
use gpuchain_agent_kit::state_file as store;

/// The whole program: parses the command line, runs the command, and maps its error to the
/// exit code.
pub fn run_cli() -> std::process::ExitCode {
    gpuchain_agent_kit::cli::run_program(gpuchain_agent_kit::program!(), cli::Command::run)
}
