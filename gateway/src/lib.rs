//! `gpuchain-gateway`: the client's side of serving. A local HTTP server with the OpenAI API
//! (`POST /v1/chat/completions`, streamed or whole; `POST /v1/completions`;
//! `POST /v1/embeddings`; `GET /v1/models`) in front of many providers' serving endpoints
//! (`gpuchain-provider serve-model`), so any OpenAI SDK or tool works unchanged against
//! many providers at once.
//!
//! Each provider is probed continuously; requests go to the best one for their model by a
//! weighted cost of its measured time to first token (stretched by what already runs
//! there), its price and its on-chain reputation; a request is retried on the next provider
//! when one refuses to connect, fails or is full, hedged with the next when its first token
//! is late, and an answer that breaks off mid-stream is resumed on another provider without
//! the client noticing. A provider that stops answering is routed around and reported in
//! the log and the metrics until it answers again.
//!
//! An upstream given `lease=ID` is paid on that chain lease (`lease.rs`): requests are signed
//! with the client's key, every answer's receipt is checked against what arrived and kept,
//! and batches are acknowledged to the provider, which claims them on chain. With `--open`
//! the gateway opens the serving orders itself and routes over the leases they clear to, at
//! the endpoints the providers named in their bids (`orders.rs`); `--order` attaches to an
//! order opened before. Orders it opened are ended when it stops. With `--ringers` it mixes
//! requests of known answer into each provider's traffic and drops (and, on chain, appeals
//! against) a provider that answers one wrong (`ringers.rs`).

mod args;
mod attempt;
mod generation;
mod http;
mod lease;
mod orders;
mod pool;
mod renew;
mod ringers;
mod score;
mod sse;
mod stats;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

pub use args::{Cli, GatewayArgs, UpstreamSpec};
pub use orders::OrderSpec;

/// Serves the gateway until Ctrl-C or SIGTERM.
pub fn run(mut a: GatewayArgs) -> Result<()> {
    let weights = score::Weights {
        latency: a.latency_weight,
        price: a.price_weight,
        reputation: a.reputation_weight,
    };
    let ringers = a.ringers.as_deref().map(ringers::load).transpose()?;
    gpuchain_agent_kit::cli::block_on(async move {
        let chain = client_chain(&a)?;
        let mut opened = Vec::new();
        if let Some(chain) = &chain {
            opened = orders::open(chain, &a.open).await?;
            let mut ids = a.orders.clone();
            ids.extend(&opened);
            let found = orders::upstreams(chain, &ids, Duration::from_secs(a.order_wait_s)).await;
            match found {
                Ok(found) => a.upstreams.extend(found),
                Err(e) => {
                    if !a.keep_orders {
                        orders::end(chain, &opened).await;
                    }
                    return Err(e);
                }
            }
        }
        anyhow::ensure!(
            !a.upstreams.is_empty(),
            "nothing to route over: give --upstream, --open or --order"
        );
        let leases = open_leases(&a, chain.clone()).await?;
        let pool = Arc::new(pool::Pool::new(
            a.upstreams.clone(),
            weights,
            leases.clone(),
        )?);
        if let Some(leases) = leases.clone() {
            tokio::spawn(leases.run(pool.clone()));
        }
        let kept: Vec<(OrderSpec, u64)> = a.open.iter().cloned().zip(opened.clone()).collect();
        let opened = Arc::new(std::sync::Mutex::new(opened));
        let renewals_stopped = Arc::new(tokio::sync::Mutex::new(false));
        if let (Some(chain), Some(leases), false) = (&chain, &leases, kept.is_empty()) {
            if a.renew_before_blocks > 0 {
                let renewals = renew::Renewals::new(
                    chain.clone(),
                    pool.clone(),
                    leases.clone(),
                    a.renew_before_blocks,
                    kept,
                    opened.clone(),
                );
                tokio::spawn(renewals.run(renewals_stopped.clone()));
            }
        }
        let http_client = pool.http.clone();
        pool.probe_all().await;
        tokio::spawn(
            pool.clone()
                .probe_forever(Duration::from_millis(a.probe_interval_ms.max(50))),
        );
        if let Some(node) = a.node.clone() {
            tokio::spawn(
                pool.clone()
                    .chain_forever(node, Duration::from_millis(a.chain_read_every_ms.max(100))),
            );
        }
        let listener = tokio::net::TcpListener::bind(a.listen)
            .await
            .with_context(|| format!("listening on {}", a.listen))?;
        tracing::info!(
            listen = %listener.local_addr()?,
            upstreams = pool.upstreams().len(),
            models = ?pool.models(),
            "gateway serving"
        );
        // The address on stdout, for scripts that ask for port 0.
        println!("listening on {}", listener.local_addr()?);
        let gateway = http::Gateway {
            pool,
            stats: Arc::default(),
            max_attempts: a.max_attempts.max(1),
            hedge_after: Duration::from_millis(a.hedge_after_ms),
        };
        if let Some(ringers) = ringers {
            tokio::spawn(ringers::run(
                gateway.clone(),
                ringers,
                Duration::from_secs(a.ringer_every_s.max(1)),
                chain.clone(),
            ));
        }
        axum::serve(listener, http::router(gateway))
            .with_graceful_shutdown(gpuchain_agent_kit::run::stop_requested())
            .await?;
        // What was served is acknowledged before the orders end, so providers are paid for it.
        if let Some(leases) = &leases {
            leases.flush(&http_client).await;
        }
        // No replacement is opened from here on, and one being opened now is waited for.
        *renewals_stopped.lock().await = true;
        if let (Some(chain), false) = (&chain, a.keep_orders) {
            let opened = opened.lock().map(|o| o.clone()).unwrap_or_default();
            orders::end_open(chain, &opened).await;
        }
        Ok(())
    })
}

/// The client's key on the chain, when leases or orders need it.
fn client_chain(a: &GatewayArgs) -> Result<Option<gpuchain_agent_kit::chain::AgentChain>> {
    let needed =
        !a.open.is_empty() || !a.orders.is_empty() || a.upstreams.iter().any(|u| u.lease.is_some());
    if !needed {
        return Ok(None);
    }
    let (Some(node), Some(home), Some(key), Some(_)) = (&a.node, &a.home, &a.key, &a.receipts)
    else {
        anyhow::bail!(
            "leases (--open, --order or an upstream's lease=): give --node, --home, --key and \
             --receipts as well"
        );
    };
    Ok(Some(gpuchain_agent_kit::chain::AgentChain::connect(
        node, home, key, "gateway",
    )?))
}

/// The leases of the upstreams that name one, with the client's key and receipts directory.
async fn open_leases(
    a: &GatewayArgs,
    chain: Option<gpuchain_agent_kit::chain::AgentChain>,
) -> Result<Option<Arc<lease::Leases>>> {
    let on_lease: Vec<(u64, String)> = a
        .upstreams
        .iter()
        .filter_map(|u| u.lease.map(|l| (l, u.url.clone())))
        .collect();
    let (Some(chain), Some(dir)) = (chain, &a.receipts) else {
        return Ok(None);
    };
    if on_lease.is_empty() {
        return Ok(None);
    }
    let policy = lease::AckPolicy {
        every: a.ack_every.max(1),
        after: Duration::from_millis(a.ack_after_ms.max(100)),
    };
    let leases = lease::Leases::open(chain, dir.clone(), policy, &on_lease).await?;
    Ok(Some(Arc::new(leases)))
}
