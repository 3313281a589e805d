//! The agents' main loop: follow committed blocks from a height and hand each to the agent,
//! hand it each finished task, and stop cleanly on Ctrl-C or SIGTERM.

use anyhow::{bail, Result};
use gpuchain_client::follow::{follow, FollowConfig, FollowedBlock};
use gpuchain_client::ChainClient;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

use crate::config::ChainConfig;

/// What an agent does with the chain's blocks and its own finished tasks.
#[allow(async_fn_in_trait)] // Driven on the current task, never spawned: no Send bound.
pub trait Agent {
    /// A finished task's report.
    type Done;

    /// One committed block with its events.
    async fn on_block(&mut self, block: FollowedBlock) -> Result<()>;

    /// One finished task.
    async fn on_done(&mut self, done: Self::Done) -> Result<()>;
}

/// Resolves on Ctrl-C or SIGTERM (or at once, if SIGTERM cannot be watched).
pub async fn stop_requested() {
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("Ctrl-C: stopping"),
        _ = term.recv() => tracing::info!("SIGTERM: stopping"),
    }
}

/// Follows blocks from `from` and drives `agent` until Ctrl-C or SIGTERM (then returns
/// `Ok`), or until the follower stops or the agent fails (an error).
pub async fn follow_until_stopped<A: Agent>(
    agent: &mut A,
    client: ChainClient,
    chain: &ChainConfig,
    from: u64,
    done_rx: &mut mpsc::Receiver<A::Done>,
) -> Result<()> {
    let mut config = FollowConfig::new(&chain.node, from);
    config.websocket_url = chain.websocket_url();
    let mut blocks = follow(client, config)?;
    let mut term = signal(SignalKind::terminate())?;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => { tracing::info!("Ctrl-C: stopping"); return Ok(()); }
            _ = term.recv() => { tracing::info!("SIGTERM: stopping"); return Ok(()); }
            Some(done) = done_rx.recv() => agent.on_done(done).await?,
            block = blocks.recv() => match block {
                Some(b) => agent.on_block(b).await?,
                None => bail!("the block follower stopped"),
            },
        }
    }
}
