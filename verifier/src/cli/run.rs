//! `gpuchain-verifier run`: the daemon.

use anyhow::Result;
use clap::Args;

use super::ConfigArg;

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
    #[cfg(feature = "test-hooks")]
    let rubber_stamp = a.rubber_stamp;
    // A release build always checks what it judges.
    #[cfg(not(feature = "test-hooks"))]
    let rubber_stamp = false;
    crate::agent::run(a.config.load()?, rubber_stamp).await
}
