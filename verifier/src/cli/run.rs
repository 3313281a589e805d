//! `gpuchain-verifier run`: the daemon.

use anyhow::Result;
use clap::Args;

use super::ConfigArg;
use crate::config::Config;

/// Arguments of `run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// Test only: post `honest` on every assignment and serving audit without fetching or
    /// re-executing anything (a lazy verifier; slashable when appealed).
    #[cfg(feature = "test-hooks")]
    #[arg(long, hide = true)]
    rubber_stamp: bool,
}

pub(super) async fn run(a: RunArgs) -> Result<()> {
    crate::agent::run(Config::load(&a.config.config)?, rubber_stamp(&a)).await
}

/// The lazy test mode, from the command line where the `test-hooks` feature compiled it in.
#[cfg(feature = "test-hooks")]
fn rubber_stamp(a: &RunArgs) -> bool {
    a.rubber_stamp
}

/// A release build always checks what it judges.
#[cfg(not(feature = "test-hooks"))]
fn rubber_stamp(_: &RunArgs) -> bool {
    false
}
