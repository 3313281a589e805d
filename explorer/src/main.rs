//! `gpuchain-explorer`: see the library's documentation.

use clap::Parser;

/// The gpuchain web explorer: providers, market, verification and blocks, live from a node.
#[derive(Parser)]
#[command(name = "gpuchain-explorer", version, about)]
struct Cli {
    #[command(flatten)]
    global: gpuchain_agent_kit::cli::GlobalArgs,
    #[command(flatten)]
    explorer: gpuchain_explorer::ExplorerArgs,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    gpuchain_agent_kit::cli::init_tracing(cli.global.log_format);
    gpuchain_agent_kit::cli::exit_code(gpuchain_agent_kit::cli::block_on(gpuchain_explorer::run(
        cli.explorer,
    )))
}
