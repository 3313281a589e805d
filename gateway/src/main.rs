//! `gpuchain-gateway`: see the library's documentation.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = gpuchain_gateway::Cli::parse();
    gpuchain_agent_kit::cli::init_tracing(cli.global.log_format);
    gpuchain_agent_kit::cli::exit_code(gpuchain_gateway::run(cli.gateway))
}
