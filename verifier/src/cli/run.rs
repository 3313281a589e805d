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
}

pub(super) async fn run(a: RunArgs) -> Result<()> {
    crate::agent::run(Config::load(&a.config.config)?).await
}
