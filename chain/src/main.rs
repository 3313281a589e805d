//! `gpuchaind`: runs the gpuchain ABCI application beside CometBFT, builds localnets, and is
//! the command-line client for keys, transactions and queries.

mod cli;

fn main() -> std::process::ExitCode {
    cli::run()
}
