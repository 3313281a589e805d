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
    /// Test only: post `honest` on every assignment without fetching or re-executing
    /// anything (a lazy verifier; slashable when appealed).
    #[arg(long, hide = true)]
    rubber_stamp: bool,
}

pub(super) async fn run(a: RunArgs) -> Result<()> {
    crate::agent::run(Config::load(&a.config.config)?, a.rubber_stamp).await
}
