//! `gpuchain-verifier`: the agent a verifier runs.
//!
//! `init` writes a configuration file, `register`/`bond`/`unbond` manage the verifier bond
//! with signed transactions, `run` is the daemon (follow blocks, take assignments, fetch
//! the job's blobs and the provider's output, re-execute, compare under the job kind's
//! tolerance, post verdicts; plant and reveal ringer challenges; Prometheus metrics; durable
//! local state) and `status` shows what it is doing. See docs/verifier.md.

mod agent;
mod chain;
mod check;
mod cli;
mod config;
mod metrics;
mod ringer;
mod state;
/// The agents' atomic JSON state file (shared with the verifier agent, in `client/`).
use gpuchain_client::state_file as store;
mod training;

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
