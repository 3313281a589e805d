//! `gpuchain-provider`: the agent a GPU owner runs.
//!
//! For now it has two commands that work without a chain: `probe` describes the machine's
//! hardware (GPUs through NVML; a machine without NVML is described as CPU-only), and
//! `run-job` runs any job spec locally — fetching its blobs, verifying their hashes and
//! writing the result — so jobs can be tried before anything is posted on chain.

mod cli;

use clap::Parser;

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = cli::Cli::parse();
    match args.command.run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
