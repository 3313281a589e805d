//! `gpuchain-provider run`: the daemon.

use std::time::Duration;

use anyhow::Result;
use clap::Args;

use super::ConfigArg;
use crate::agent::{self, RunOptions};
use crate::dishonest::Dishonest;

/// Arguments of `run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// Test only: cheat in this way (see docs/provider.md).
    #[cfg(feature = "test-hooks")]
    #[arg(long, hide = true, value_enum)]
    dishonest: Option<Dishonest>,
    /// Test only: wait this many milliseconds before executing each job.
    #[cfg(feature = "test-hooks")]
    #[arg(long, hide = true, default_value_t = 0)]
    exec_delay_ms: u64,
}

pub(super) async fn run(a: RunArgs) -> Result<()> {
    agent::run(a.config.load()?, options(&a)).await
}

/// The test modes, from the command line where the `test-hooks` feature compiled them in.
#[cfg(feature = "test-hooks")]
fn options(a: &RunArgs) -> RunOptions {
    RunOptions {
        dishonest: a.dishonest,
        exec_delay: Duration::from_millis(a.exec_delay_ms),
    }
}

/// An honest agent that runs each job at once: a release build has no other.
#[cfg(not(feature = "test-hooks"))]
fn options(_: &RunArgs) -> RunOptions {
    RunOptions {
        dishonest: None::<Dishonest>,
        exec_delay: Duration::ZERO,
    }
}
