//! Following the chain block by block: a stream of committed blocks with their transaction
//! results and block events, for agents (provider, verifier) that react to the chain.
//!
//! The CometBFT websocket (`NewBlock` subscription) is only a wake-up signal: every block is
//! read with HTTP `block_results`, in height order, so a dropped connection, a missed
//! notification or an agent restart never loses a block — the follower catches up every
//! height after the last one it delivered. When the websocket is down it reconnects with
//! exponential backoff and keeps polling `/status` meanwhile.

use std::time::Duration;

use futures::StreamExt;
use tendermint_rpc::client::CompatMode;
use tendermint_rpc::query::EventType;
use tendermint_rpc::{Client, SubscriptionClient, WebSocketClient, WebSocketClientUrl};
use tokio::sync::mpsc;

use crate::ChainClient;

/// One ABCI event: its type and its attributes in order.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ChainEvent {
    /// Event type, e.g. `auction.lease_created`.
    pub kind: String,
    /// `(key, value)` pairs.
    pub attrs: Vec<(String, String)>,
}

impl ChainEvent {
    /// The first value of attribute `key`.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Attribute `key` parsed as an integer.
    pub fn attr_u64(&self, key: &str) -> Option<u64> {
        self.attr(key)?.parse().ok()
    }

    /// The event as the module's typed event `T` (e.g. `gpuchain_auction::LeaseCreatedEvent`),
    /// if it is one: kind and attribute names come from the module's own definition.
    pub fn decode<T: gpuchain_types::TypedEvent>(&self) -> Option<T> {
        T::decode(&self.kind, |key| self.attr(key))
    }
}

/// A transaction's result in a block.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BlockTx {
    /// 0 on success.
    pub code: u32,
    /// Events (a failed transaction keeps only its fee events).
    pub events: Vec<ChainEvent>,
}

/// A committed block's results.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FollowedBlock {
    /// Height.
    pub height: u64,
    /// Transaction results in block order.
    pub txs: Vec<BlockTx>,
    /// FinalizeBlock events (end-block work: clearing, payouts, …).
    pub block_events: Vec<ChainEvent>,
}

impl FollowedBlock {
    /// Events of successful transactions, then block events.
    pub fn events(&self) -> impl Iterator<Item = &ChainEvent> {
        self.txs
            .iter()
            .filter(|t| t.code == 0)
            .flat_map(|t| t.events.iter())
            .chain(self.block_events.iter())
    }
}

/// Errors of the follower.
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    /// The node's URL cannot be turned into a websocket URL.
    #[error("bad websocket url {0:?}: {1}")]
    BadUrl(String, String),
}

/// How to follow.
#[derive(Clone, Debug)]
pub struct FollowConfig {
    /// First height to deliver.
    pub from_height: u64,
    /// Websocket endpoint, e.g. `ws://127.0.0.1:26657/websocket`.
    pub websocket_url: String,
    /// Polling interval while the websocket is down (and as a safety net).
    pub poll_interval: Duration,
    /// Longest backoff between websocket reconnects.
    pub max_backoff: Duration,
}

impl FollowConfig {
    /// Follows `node_url` (http) from `from_height`, deriving the websocket URL.
    pub fn new(node_url: &str, from_height: u64) -> FollowConfig {
        FollowConfig {
            from_height,
            websocket_url: websocket_url(node_url),
            poll_interval: Duration::from_secs(2),
            max_backoff: Duration::from_secs(30),
        }
    }
}

/// `http://host:port` → `ws://host:port/websocket` (`https` → `wss`).
pub fn websocket_url(node_url: &str) -> String {
    let base = node_url.trim_end_matches('/');
    let ws = if let Some(rest) = base.strip_prefix("https://") {
        format!("wss://{rest}")
    } else if let Some(rest) = base.strip_prefix("http://") {
        format!("ws://{rest}")
    } else {
        base.to_string()
    };
    format!("{ws}/websocket")
}

/// Starts following; blocks arrive on the returned channel in height order, each exactly
/// once. The task ends when the receiver is dropped.
pub fn follow(
    client: ChainClient,
    config: FollowConfig,
) -> Result<mpsc::Receiver<FollowedBlock>, FollowError> {
    let url: WebSocketClientUrl = config
        .websocket_url
        .parse()
        .map_err(|e| FollowError::BadUrl(config.websocket_url.clone(), format!("{e}")))?;
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(run(client, config, url, tx));
    Ok(rx)
}

/// Wake-ups from the websocket task to the catch-up loop.
type Wake = mpsc::Sender<()>;

async fn run(
    client: ChainClient,
    config: FollowConfig,
    url: WebSocketClientUrl,
    out: mpsc::Sender<FollowedBlock>,
) {
    let (wake_tx, mut wake_rx) = mpsc::channel::<()>(16);
    let ws = tokio::spawn(websocket_loop(url, config.max_backoff, wake_tx));
    let mut next = config.from_height.max(1);
    loop {
        match catch_up(&client, &mut next, &out).await {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => tracing::warn!(error = %e, next, "catching up blocks failed; will retry"),
        }
        // Wait for a websocket notification, or poll.
        let _ = tokio::time::timeout(config.poll_interval, wake_rx.recv()).await;
        if out.is_closed() {
            break;
        }
    }
    ws.abort();
}

/// Delivers every block from `next` to the one below the latest; false when the receiver
/// is gone. CometBFT stores a block, and serves its results, before the app has committed
/// it, so a query made on block `h`'s events could still read the state before `h`. The
/// next block starts only once the app committed `h`: a block is delivered when its
/// successor exists, and its state is readable by then.
async fn catch_up(
    client: &ChainClient,
    next: &mut u64,
    out: &mpsc::Sender<FollowedBlock>,
) -> anyhow::Result<bool> {
    let latest = client.latest_height().await?;
    while *next < latest {
        let block = block_results(client, *next).await?;
        if out.send(block).await.is_err() {
            return Ok(false);
        }
        *next += 1;
    }
    Ok(true)
}

/// Reads one block's results over HTTP.
pub async fn block_results(client: &ChainClient, height: u64) -> anyhow::Result<FollowedBlock> {
    let res = client
        .rpc()
        .block_results(tendermint::block::Height::try_from(height)?)
        .await?;
    let txs = res
        .txs_results
        .unwrap_or_default()
        .into_iter()
        .map(|r| BlockTx {
            code: r.code.value(),
            events: r.events.iter().map(convert).collect(),
        })
        .collect();
    Ok(FollowedBlock {
        height,
        txs,
        block_events: res.finalize_block_events.iter().map(convert).collect(),
    })
}

fn convert(e: &tendermint::abci::Event) -> ChainEvent {
    ChainEvent {
        kind: e.kind.clone(),
        attrs: e
            .attributes
            .iter()
            .map(|a| {
                (
                    a.key_str().unwrap_or_default().to_string(),
                    a.value_str().unwrap_or_default().to_string(),
                )
            })
            .collect(),
    }
}

async fn websocket_loop(url: WebSocketClientUrl, max_backoff: Duration, wake: Wake) {
    let mut backoff = Duration::from_millis(250);
    loop {
        match subscribe_once(url.clone(), &wake).await {
            Ok(()) => tracing::info!("websocket closed; reconnecting"),
            Err(e) => tracing::warn!(error = %e, ?backoff, "websocket failed; reconnecting"),
        }
        if wake.is_closed() {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(max_backoff);
    }
}

/// One websocket session: every `NewBlock` notification wakes the catch-up loop.
async fn subscribe_once(url: WebSocketClientUrl, wake: &Wake) -> anyhow::Result<()> {
    let (client, driver) = WebSocketClient::builder(url)
        .compat_mode(CompatMode::V0_38)
        .build()
        .await?;
    let driver = tokio::spawn(driver.run());
    let mut sub = client.subscribe(EventType::NewBlock.into()).await?;
    tracing::debug!("subscribed to NewBlock");
    // Catch up whatever happened while disconnected.
    let _ = wake.try_send(());
    while let Some(item) = sub.next().await {
        if let Err(e) = item {
            // A notification we could not decode still means a new block.
            tracing::debug!(error = %e, "undecodable websocket event");
        }
        if wake.send(()).await.is_err() {
            break;
        }
    }
    client.close()?;
    let _ = driver.await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn websocket_url_is_derived_from_the_node_url() {
        assert_eq!(
            websocket_url("http://127.0.0.1:26657"),
            "ws://127.0.0.1:26657/websocket"
        );
        assert_eq!(websocket_url("https://rpc.x/"), "wss://rpc.x/websocket");
    }

    #[test]
    fn only_successful_transactions_contribute_events() {
        let ev = |k: &str| ChainEvent {
            kind: k.into(),
            attrs: vec![("order_id".into(), "7".into())],
        };
        let block = FollowedBlock {
            height: 3,
            txs: vec![
                BlockTx {
                    code: 0,
                    events: vec![ev("a")],
                },
                BlockTx {
                    code: 5,
                    events: vec![ev("b")],
                },
            ],
            block_events: vec![ev("c")],
        };
        let kinds: Vec<_> = block.events().map(|e| &*e.kind).collect();
        assert_eq!(kinds, ["a", "c"]);
        assert_eq!(block.block_events[0].attr_u64("order_id"), Some(7));
    }
}
