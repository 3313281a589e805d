//! `gpuchain-verifier`: the agent a verifier runs.
//!
//! `init` writes a configuration file, `register`/`bond`/`unbond` manage the verifier bond
//! with signed transactions, `run` is the daemon (follow blocks, take assignments, fetch
//! the job's blobs and the provider's output, re-execute, compare under the job kind's
//! tolerance, post verdicts; plant and reveal ringer challenges; Prometheus metrics; durable
//! local state) and `status` shows what it is doing. See docs/verifier.md.
//!
//! The library is the program; `src/main.rs` only calls [`run_cli`]. It is a library so
//! that the end-to-end test crate can enable its `test-hooks` feature (the dishonest test
//! modes), which a release build of the binary alone never has.

mod agent;
mod chain;
mod check;
mod cli;
mod config;
mod metrics;
mod one_thread;
mod ringer;
mod state;
/// The agents' atomic JSON state file (from the agent kit).
use gpuchain_agent_kit::state_file as store;
mod training;

/// The whole program: parses the command line, runs the command, and maps its error to the
/// exit code.
pub fn run_cli() -> std::process::ExitCode {
    gpuchain_agent_kit::cli::run_program(gpuchain_agent_kit::program!(), cli::Command::run)
}
