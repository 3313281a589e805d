//! Reading the chain into the model: on start every block the node keeps, from its earliest
//! height, then each new block as the follower in `client/` delivers it (the websocket wakes
//! it; HTTP reads every height in order, so nothing is missed across reconnects). A block's
//! header and transactions come from `block`, its results from `block_results`; the
//! transactions are decoded with x/tx's borsh types.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use gpuchain_client::follow::{self, FollowConfig, FollowedBlock};
use gpuchain_client::ChainClient;
use sha2::{Digest, Sha256};
use tendermint_rpc::Client;
use tokio::sync::{watch, RwLock};

use crate::model::{BlockRow, IngestBlock, IngestTx, ReadModel};

/// How the rebuild at start went, for the status page and the figures.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Progress {
    /// The node's latest height when the explorer started.
    pub target: u64,
    /// Heights read so far.
    pub ingested: u64,
    /// Milliseconds the rebuild took (reading every block up to `target`), once done.
    pub rebuild_ms: Option<u64>,
}

/// The upper-case hex sha256 of a transaction's bytes: its CometBFT hash.
pub fn tx_hash(bytes: &[u8]) -> String {
    hex::encode_upper(Sha256::digest(bytes))
}

/// Decodes one block's transactions against their results.
pub fn decode_txs(data: &[Vec<u8>], results: &FollowedBlock) -> Vec<IngestTx> {
    data.iter()
        .enumerate()
        .map(|(i, bytes)| {
            let result = results.txs.get(i);
            IngestTx {
                hash: tx_hash(bytes),
                decoded: gpuchain_tx::Tx::decode(bytes)
                    .ok()
                    .map(|tx| (tx.signer(), tx.body.msgs)),
                code: result.map_or(0, |r| r.code),
                events: result.map(|r| r.events.clone()).unwrap_or_default(),
            }
        })
        .collect()
}

/// Reads the header and transactions of `results.height` and combines them.
pub async fn read_block(client: &ChainClient, results: FollowedBlock) -> Result<IngestBlock> {
    let height = tendermint::block::Height::try_from(results.height)?;
    let response = client
        .rpc()
        .block(height)
        .await
        .with_context(|| format!("reading block {}", results.height))?;
    let block = response.block;
    let txs = decode_txs(block.data(), &results);
    let failed = u32::try_from(txs.iter().filter(|t| t.code != 0).count()).unwrap_or(u32::MAX);
    let events = results.events().count();
    let row = BlockRow {
        height: results.height,
        time: block.header.time.to_rfc3339(),
        unix: block.header.time.unix_timestamp(),
        hash: response.block_id.hash.to_string(),
        proposer: block.header.proposer_address.to_string(),
        txs: u32::try_from(txs.len()).unwrap_or(u32::MAX),
        failed_txs: failed,
        events: u32::try_from(events).unwrap_or(u32::MAX),
    };
    Ok(IngestBlock {
        row,
        txs,
        block_events: results.block_events,
    })
}

/// Follows the chain into `model` for as long as the process runs, publishing each height
/// read on `heads` (once the rebuild has caught up: pages are not refreshed for every old
/// block) and the rebuild's progress on `progress`.
pub async fn run(
    client: ChainClient,
    node: String,
    model: Arc<RwLock<ReadModel>>,
    heads: watch::Sender<u64>,
    progress: Arc<RwLock<Progress>>,
) -> Result<()> {
    let started = Instant::now();
    let status = loop {
        match client.status().await {
            Ok(status) => break status,
            Err(e) => {
                tracing::warn!(error = %e, node, "node not answering; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    };
    let earliest = status.sync_info.earliest_block_height.value().max(1);
    let target = status.sync_info.latest_block_height.value();
    {
        let mut m = model.write().await;
        *m = ReadModel::new(status.node_info.network.to_string(), earliest);
    }
    progress.write().await.target = target;
    let mut config = FollowConfig::new(&node, earliest);
    config.poll_interval = Duration::from_millis(500);
    let mut blocks = follow::follow(client.clone(), config)?;
    while let Some(results) = blocks.recv().await {
        let height = results.height;
        let block = loop {
            match read_block(&client, results.clone()).await {
                Ok(block) => break block,
                Err(e) => {
                    tracing::warn!(error = %e, height, "reading a block failed; retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        };
        model.write().await.ingest(block);
        {
            let mut p = progress.write().await;
            p.ingested = p.ingested.saturating_add(1);
            if p.rebuild_ms.is_none() && height.saturating_add(1) >= target {
                let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                p.rebuild_ms = Some(ms);
                tracing::info!(height, ms, "read model rebuilt from the chain");
            }
        }
        if height.saturating_add(1) >= target {
            heads.send_replace(height);
        }
    }
    Ok(())
}
