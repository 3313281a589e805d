//! `gpuchain-provider`: the agent a GPU owner runs.
//!
//! `probe` describes the machine (GPUs through NVML; without NVML it is CPU-only), `run-job`
//! runs a job spec locally, `init` writes a configuration file, `register`/`bond`/`unbond`/
//! `withdraw` manage the provider's registration and stake with signed transactions, `run`
//! is the daemon (follow blocks, bid, execute, commit, reveal, get paid; Prometheus
//! metrics; durable local state) and `status` shows what it is doing.

mod agent;
mod attrs;
mod chain;
mod cli;
mod config;
mod dishonest;
mod eligibility;
mod metrics;
mod pricing;
mod state;
/// The agents' atomic JSON state file (shared with the verifier agent, in `client/`).
use gpuchain_client::state_file as store;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = cli::Cli::parse();
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match args.log_format {
        cli::LogFormat::Json => builder.json().init(),
        cli::LogFormat::Text => builder.init(),
    }
    match args.command.run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
