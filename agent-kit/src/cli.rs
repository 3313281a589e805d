//! The command-line skeleton every agent shares: the program around the agent's
//! subcommands, log and output formats, the runtime, and printing a transaction. The
//! arguments the agents' chain-facing subcommands share are in [`crate::args`].

use anyhow::Result;
use clap::{CommandFactory, FromArgMatches, Subcommand, ValueEnum};
use gpuchain_client::TxOutcome;

/// Log format on stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Output format of commands that report something.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Human-readable text.
    Text,
    /// JSON on stdout.
    Json,
}

/// Options every agent command takes.
#[derive(Debug, clap::Args)]
pub struct GlobalArgs {
    /// Log format on stderr.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "text",
        env = "GPUCHAIN_LOG_FORMAT"
    )]
    pub log_format: LogFormat,
}

/// What an agent's program says of itself: `--version` prints its name and version, `--help`
/// starts with its description. [`program!`](crate::program) fills it from the agent
/// crate's manifest.
#[derive(Clone, Copy, Debug)]
pub struct Program {
    /// The program's name, e.g. `gpuchain-provider`.
    pub name: &'static str,
    /// Its version.
    pub version: &'static str,
    /// Its one-line description.
    pub about: &'static str,
}

/// The [`cli::Program`](crate::cli::Program) of the crate this is written in: its package
/// name, version and description.
#[macro_export]
macro_rules! program {
    () => {
        $crate::cli::Program {
            name: env!("CARGO_PKG_NAME"),
            version: env!("CARGO_PKG_VERSION"),
            about: env!("CARGO_PKG_DESCRIPTION"),
        }
    };
}

/// An agent's command line: the options every agent takes, then one of its subcommands.
#[derive(Debug, clap::Parser)]
struct Cli<S: Subcommand> {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: S,
}

impl Program {
    /// The command line of this program with the subcommands `S`.
    fn command<S: Subcommand>(self) -> clap::Command {
        Cli::<S>::command()
            .name(self.name)
            .version(self.version)
            .about(self.about)
            .long_about(None)
    }
}

/// The whole of an agent's program: parses its command line, installs the tracing
/// subscriber, runs the subcommand with `run`, and maps its error to the exit code.
pub fn run_program<S: Subcommand>(
    program: Program,
    run: fn(S) -> Result<()>,
) -> std::process::ExitCode {
    let mut command = program.command::<S>();
    let mut matches = command.clone().get_matches();
    let cli = match Cli::<S>::from_arg_matches_mut(&mut matches) {
        Ok(cli) => cli,
        Err(e) => e.format(&mut command).exit(),
    };
    init_tracing(cli.global.log_format);
    exit_code(run(cli.command))
}

/// Installs the tracing subscriber (`RUST_LOG`, default `info`) writing `format` to stderr.
pub fn init_tracing(format: LogFormat) {
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
}

/// The exit code of a command: failure with the error chain on stderr.
pub fn exit_code(result: Result<()>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Runs `work` on the agents' runtime (two worker threads; jobs run on blocking threads).
pub fn block_on<F: std::future::Future<Output = Result<()>>>(work: F) -> Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(work)
}

/// Prints a committed transaction (`what` names it in text output); fails if it was refused.
pub fn print_tx(outcome: TxOutcome, output: Output, what: &str) -> Result<()> {
    let outcome = outcome.ok()?;
    match output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&outcome)?),
        Output::Text => println!(
            "{what}: included at height {} (tx {})",
            outcome.height, outcome.hash
        ),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Subcommand)]
    enum Command {
        /// Does nothing.
        Idle,
    }

    #[test]
    fn the_program_names_itself_and_the_subcommands_follow_the_global_options() {
        let program = Program {
            name: "gpuchain-test",
            version: "9.9.9",
            about: "An agent under test.",
        };
        let mut command = program.command::<Command>();
        assert_eq!(command.render_version(), "gpuchain-test 9.9.9\n");
        let help = command.render_help().to_string();
        assert!(help.starts_with("An agent under test.\n"), "{help}");
        assert!(help.contains("--log-format"), "{help}");
        let cli = Cli::<Command>::try_parse_from(["x", "idle", "--log-format", "json"]).unwrap();
        assert_eq!(cli.global.log_format, LogFormat::Json);
    }
}
