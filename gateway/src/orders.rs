//! Serving orders the gateway opens (`--open`) or attaches to (`--order`): the gateway's
//! providers come from the chain. An opened order is signed with the client's key and its
//! deposit locked; once it clears, each lease's provider, price, region and endpoint (the URL
//! the provider named in its bid) become an upstream paid on that lease.

use std::str::FromStr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use gpuchain_agent_kit::chain::AgentChain;
use gpuchain_serving::{
    ModelRef, MsgEndServing, MsgOpenServing, ServingKind, ServingLease, ServingLeaseState,
    ServingMsg, ServingOrder, ServingOrderOpenedEvent, ServingOrderState,
};
use gpuchain_tx::Msg;
use gpuchain_types::Amount;

use crate::UpstreamSpec;

/// A serving order to open, as given on the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderSpec {
    /// The model name clients ask for.
    pub model: String,
    /// blake3 of its weights file.
    pub hash: [u8; 32],
    /// Generation or embeddings.
    pub kind: ServingKind,
    /// How many providers.
    pub providers: u32,
    /// Ceiling price, ugpu per million tokens or thousand inputs.
    pub max_price: Amount,
    /// Blocks the leases serve.
    pub blocks: u64,
    /// Locked in escrow.
    pub deposit: Amount,
    /// Blocks bids are taken.
    pub bid_window: u64,
    /// Only providers of this region.
    pub region: Option<String>,
}

impl OrderSpec {
    fn msg(&self) -> MsgOpenServing {
        MsgOpenServing {
            model: ModelRef {
                name: self.model.clone(),
                blake3: self.hash,
                kind: self.kind,
            },
            providers: self.providers,
            max_price: self.max_price,
            duration_blocks: self.blocks,
            bid_window_blocks: self.bid_window,
            deposit: self.deposit,
            region: self.region.clone(),
        }
    }
}

fn number<T: FromStr>(key: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{key} `{value}` is not a whole number"))
}

impl FromStr for OrderSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<OrderSpec, String> {
        let (mut model, mut hash, mut max_price, mut blocks, mut deposit) =
            (None, None, None, None, None);
        let mut spec = OrderSpec {
            model: String::new(),
            hash: [0; 32],
            kind: ServingKind::Generation,
            providers: 1,
            max_price: 0,
            blocks: 0,
            deposit: 0,
            bid_window: 5,
            region: None,
        };
        for part in s.split(',') {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}`: expected key=value"))?;
            match key {
                "model" => model = Some(value.to_string()),
                "hash" => {
                    let bytes = hex::decode(value)
                        .ok()
                        .and_then(|b| <[u8; 32]>::try_from(b).ok())
                        .ok_or_else(|| format!("hash `{value}` is not 64 hex digits (blake3)"))?;
                    hash = Some(bytes);
                }
                "kind" => {
                    spec.kind = match value {
                        "generation" | "chat" => ServingKind::Generation,
                        "embedding" | "embeddings" => ServingKind::Embedding,
                        _ => return Err(format!("kind `{value}`: generation or embedding")),
                    }
                }
                "providers" => spec.providers = number(key, value)?,
                "max-price" => max_price = Some(number(key, value)?),
                "blocks" => blocks = Some(number(key, value)?),
                "deposit" => deposit = Some(number(key, value)?),
                "bid-window" => spec.bid_window = number(key, value)?,
                "region" => spec.region = Some(value.to_string()),
                _ => {
                    return Err(format!(
                        "unknown `{key}` (model, hash, kind, providers, max-price, blocks, \
                         deposit, bid-window or region)"
                    ))
                }
            }
        }
        let missing = |what: &str| format!("an order needs {what}=…");
        spec.model = model.ok_or_else(|| missing("model"))?;
        spec.hash = hash.ok_or_else(|| missing("hash"))?;
        spec.max_price = max_price.ok_or_else(|| missing("max-price"))?;
        spec.blocks = blocks.ok_or_else(|| missing("blocks"))?;
        spec.deposit = deposit.ok_or_else(|| missing("deposit"))?;
        Ok(spec)
    }
}

/// Opens each order with the client's key; their ids, in order.
pub(crate) async fn open(chain: &AgentChain, specs: &[OrderSpec]) -> Result<Vec<u64>> {
    let mut ids = Vec::with_capacity(specs.len());
    for spec in specs {
        let outcome = chain
            .submit(Msg::Serving(ServingMsg::Open(spec.msg())))
            .await
            .with_context(|| format!("opening a serving order for {}", spec.model))?;
        if outcome.code != 0 {
            bail!(
                "the chain refused the serving order for {} (code {}): {}",
                spec.model,
                outcome.code,
                outcome.log
            );
        }
        let opened = outcome
            .event::<ServingOrderOpenedEvent>()
            .context("the order's transaction carries no order_opened event")?;
        tracing::info!(
            order = opened.order_id,
            model = %spec.model,
            providers = spec.providers,
            "serving order opened; waiting for its bids to clear"
        );
        ids.push(opened.order_id);
    }
    Ok(ids)
}

/// The upstreams of `order_ids`' serving leases, once every order has cleared (waits up to
/// `wait` for orders still taking bids). An order of another client, or one that closed
/// without leases, is an error.
pub(crate) async fn upstreams(
    chain: &AgentChain,
    order_ids: &[u64],
    wait: Duration,
) -> Result<Vec<UpstreamSpec>> {
    let deadline = Instant::now() + wait;
    let mut out = Vec::new();
    for &id in order_ids {
        let order = loop {
            let order: ServingOrder = chain
                .client
                .get(&gpuchain_serving::state_key::order(id))
                .await?
                .with_context(|| format!("serving order {id} does not exist"))?;
            if order.client != chain.address {
                bail!(
                    "serving order {id} belongs to client {}, not to this gateway's key ({})",
                    order.client,
                    chain.address
                );
            }
            if order.state != ServingOrderState::Bidding {
                break order;
            }
            if Instant::now() >= deadline {
                bail!("serving order {id} still takes bids after {wait:?}");
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        };
        let found = lease_upstreams(chain, &order).await?;
        let serving = found.len();
        out.extend(found);
        if serving == 0 {
            bail!(
                "serving order {id} ({}) has no serving lease: {}",
                order.model.name,
                if order.leases.is_empty() {
                    "no eligible provider bid at or under its ceiling; its deposit went back"
                } else {
                    "its leases were dropped or ended"
                }
            );
        }
    }
    Ok(out)
}

/// An upstream for each serving lease of `order`.
pub(crate) async fn lease_upstreams(
    chain: &AgentChain,
    order: &ServingOrder,
) -> Result<Vec<UpstreamSpec>> {
    let mut out = Vec::new();
    for &lease_id in &order.leases {
        let lease: Option<ServingLease> = chain
            .client
            .get(&gpuchain_serving::state_key::lease(lease_id))
            .await?;
        let Some(lease) = lease.filter(|l| l.state == ServingLeaseState::Serving) else {
            continue;
        };
        let region = chain
            .provider(&lease.provider)
            .await
            .ok()
            .flatten()
            .map(|p| p.attrs.region);
        tracing::info!(
            order = order.id,
            lease = lease.id,
            provider = %lease.provider,
            endpoint = %lease.endpoint,
            price = lease.price,
            "routing over a serving lease"
        );
        out.push(UpstreamSpec {
            url: lease.endpoint.trim_end_matches('/').to_string(),
            price: u64::try_from(lease.price).ok(),
            provider: Some(lease.provider),
            region,
            lease: Some(lease.id),
            model: Some(lease.model.name.clone()),
        });
    }
    Ok(out)
}

/// [`end`] for those of `order_ids` not closed yet (a renewed order's predecessors close by
/// themselves once their leases end).
pub(crate) async fn end_open(chain: &AgentChain, order_ids: &[u64]) {
    let mut open = Vec::new();
    for &id in order_ids {
        let order: Option<ServingOrder> = chain
            .client
            .get(&gpuchain_serving::state_key::order(id))
            .await
            .ok()
            .flatten();
        if order.is_none_or(|o| o.state != ServingOrderState::Closed) {
            open.push(id);
        }
    }
    end(chain, &open).await;
}

/// Ends the orders the gateway opened, so the rest of their deposits come back after the
/// claim grace.
pub(crate) async fn end(chain: &AgentChain, order_ids: &[u64]) {
    for &order_id in order_ids {
        let msg = Msg::Serving(ServingMsg::End(MsgEndServing { order_id }));
        match chain.submit(msg).await {
            Ok(o) if o.code == 0 => tracing::info!(order = order_id, "serving order ended"),
            Ok(o) => {
                tracing::warn!(order = order_id, code = o.code, log = %o.log, "ending refused")
            }
            Err(e) => tracing::warn!(order = order_id, error = %e, "ending not sent"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_order_names_its_model_price_length_and_deposit() {
        let hash = "ab".repeat(32);
        let spec: OrderSpec = format!(
            "model=smollm2,hash={hash},providers=3,max-price=500000,blocks=2000,deposit=50000000"
        )
        .parse()
        .unwrap();
        assert_eq!(spec.model, "smollm2");
        assert_eq!(spec.hash, [0xab; 32]);
        assert_eq!(spec.kind, ServingKind::Generation);
        assert_eq!(
            (spec.providers, spec.max_price, spec.blocks, spec.deposit),
            (3, 500_000, 2_000, 50_000_000)
        );
        assert_eq!((spec.bid_window, spec.region.as_deref()), (5, None));
        let spec: OrderSpec = format!(
            "model=minilm,hash={hash},kind=embedding,max-price=9,blocks=100,deposit=1,\
             bid-window=2,region=eu"
        )
        .parse()
        .unwrap();
        assert_eq!(spec.kind, ServingKind::Embedding);
        assert_eq!((spec.bid_window, spec.region.as_deref()), (2, Some("eu")));
        let m = spec.msg();
        assert_eq!(
            (m.model.name.as_str(), m.duration_blocks, m.deposit),
            ("minilm", 100, 1)
        );

        let full = format!("model=m,hash={hash},max-price=1,blocks=1,deposit=1");
        for bad in [
            full.replace("model=m,", ""),
            full.replace(&format!("hash={hash},"), ""),
            full.replace("max-price=1,", ""),
            full.replace("blocks=1,", ""),
            full.replace(",deposit=1", ""),
            full.replace(&hash, "abc"),
            full.replace("blocks=1", "blocks=many"),
            format!("{full},kind=images"),
            format!("{full},colour=red"),
            format!("{full},region"),
        ] {
            assert!(bad.parse::<OrderSpec>().is_err(), "{bad}");
        }
    }
}
