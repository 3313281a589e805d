//! gpuchain's web explorer: the market as people browse it — providers by GPU, VRAM, region,
//! price and record; orders with their auctions, clearing prices and leases; verdicts,
//! appeals, ringers and slashes; blocks, transactions and validators — served by our own
//! binary, live from a node, with a JSON twin of every page.
//!
//! The explorer follows the chain over CometBFT's websocket and RPC (`client/`'s follower)
//! into a small read model (`model.rs`), rebuilt from the chain on every start and never the
//! source of truth; current objects are read from state by the modules' own typed views
//! (`state.rs`). Pages are rendered on the server (`web/`); a little script swaps the page's
//! live region when a new block arrives (server-sent events on `/live`) and draws charts with
//! uPlot, fetched from the npm registry by `scripts/fetch-explorer-assets.sh`.

pub mod ingest;
pub mod model;
pub mod state;
pub mod web;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use gpuchain_client::ChainClient;
use tokio::sync::{watch, RwLock};

/// How to run the explorer.
#[derive(Clone, Debug, clap::Args)]
pub struct ExplorerArgs {
    /// The node's CometBFT RPC address.
    #[arg(long, default_value = "http://127.0.0.1:26657")]
    pub node: String,
    /// Where to serve the pages.
    #[arg(long, default_value = "127.0.0.1:8088")]
    pub listen: SocketAddr,
    /// Directory with uPlot's built files (scripts/fetch-explorer-assets.sh prints it);
    /// default: $GPUCHAIN_CACHE/explorer-assets/uplot-1.6.32, or under ~/.cache/gpuchain.
    #[arg(long)]
    pub assets: Option<PathBuf>,
}

/// The default assets directory (where the fetch script puts uPlot).
pub fn default_assets() -> PathBuf {
    let cache = std::env::var_os("GPUCHAIN_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/gpuchain")))
        .unwrap_or_else(|| PathBuf::from(".cache/gpuchain"));
    cache.join("explorer-assets/uplot-1.6.32")
}

/// Runs the explorer until the process ends: the ingest task and the HTTP server.
pub async fn run(args: ExplorerArgs) -> Result<()> {
    let client = ChainClient::new(&args.node)?;
    let model = Arc::new(RwLock::new(model::ReadModel::default()));
    let progress = Arc::new(RwLock::new(ingest::Progress::default()));
    // Blocks read go to `ingested`; the refresher brings the state pages use up to each
    // one and only then announces it on `heads` (pages and /live).
    let (ingested_tx, mut ingested) = watch::channel(0u64);
    let (heads_tx, heads) = watch::channel(0u64);
    let cache = Arc::new(state::StateCache::new(client.clone()));
    let refresher = cache.clone();
    tokio::spawn(async move {
        while ingested.changed().await.is_ok() {
            let height = *ingested.borrow_and_update();
            if let Err(e) = refresher.refresh(height).await {
                tracing::warn!(error = %e, height, "refreshing state failed; pages fetch it");
            }
            heads_tx.send_replace(height);
        }
    });
    let assets = args.assets.clone().unwrap_or_else(default_assets);
    let app = web::App(Arc::new(web::Inner {
        model: model.clone(),
        cache,
        client: client.clone(),
        node: args.node.clone(),
        heads,
        progress: progress.clone(),
        vendor: web::read_vendor(&assets),
    }));
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    let local = listener.local_addr()?;
    tracing::info!(url = %format!("http://{local}"), node = %args.node, "explorer serving");
    println!("explorer: http://{local}");
    let ingest = tokio::spawn(ingest::run(
        client,
        args.node.clone(),
        model,
        ingested_tx,
        progress,
    ));
    let server = axum::serve(listener, web::router(app));
    tokio::select! {
        r = server => r.context("serving http")?,
        r = ingest => r.context("ingest task")??,
    }
    Ok(())
}
