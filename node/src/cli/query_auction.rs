//! `query auction …`: orders, bids, leases and reputation, read with the modules' own
//! typed views over state fetched by prefix.

use anyhow::Result;
use gpuchain_auction::state_key as auction_key;
use gpuchain_auction::AuctionRead;
use gpuchain_client::ChainClient;
use gpuchain_reputation::ReputationRead;
use gpuchain_staking::state_key as staking_key;
use gpuchain_staking::StakingRead;
use gpuchain_types::{Address, MemState};

use super::Output;

#[derive(clap::Subcommand)]
pub(crate) enum AuctionQuery {
    /// Every order, or one.
    Orders {
        /// Only this order.
        id: Option<u64>,
    },
    /// Bids on an order.
    Bids {
        /// Order id.
        order_id: u64,
    },
    /// Leases, optionally of one provider.
    Leases {
        /// Only this provider's leases.
        #[arg(long)]
        provider: Option<Address>,
    },
    /// One lease with its order's job and where its result can be fetched.
    Lease {
        /// Lease id.
        id: u64,
    },
    /// Open orders a provider is eligible to bid on.
    OpenOrders {
        /// Provider address.
        provider: Address,
    },
    /// A provider's reputation score (ppm) and history.
    Reputation {
        /// Provider address.
        provider: Address,
    },
    /// Follow an order block by block, printing each transition (bids, clearing, every
    /// lease's state) until it is settled, cancelled or expired.
    Watch {
        /// Order id.
        order_id: u64,
        /// Give up after this many blocks.
        #[arg(long, default_value_t = 1000)]
        timeout_blocks: u64,
    },
}

async fn snapshot(client: &ChainClient, prefixes: &[&str]) -> Result<MemState> {
    let mut state = MemState::new();
    for p in prefixes {
        let part = client.snapshot(p).await?;
        state.apply(
            part.entries()
                .iter()
                .map(|(k, v)| (k.clone(), Some(v.clone())))
                .collect(),
        );
    }
    Ok(state)
}

/// Why an order or lease id is not in state: ids are never reused, so one below the next id
/// was retired (closed orders are deleted `retention_secs` of block time after they close).
async fn absent(client: &ChainClient, kind: &str, id: u64) -> anyhow::Error {
    let counter = match kind {
        "order" => gpuchain_auction::state_key::next_order_id(),
        _ => gpuchain_auction::state_key::next_lease_id(),
    };
    match client.get::<u64>(counter).await {
        Ok(Some(next)) if id < next => anyhow::anyhow!(
            "{kind} {id} was retired: a closed order and its leases are deleted \
             auction.retention_secs of block time after it closes; query a node that keeps \
             old versions (proof_heights = 0) at an earlier height to see or prove it"
        ),
        _ => anyhow::anyhow!("{kind} {id} does not exist"),
    }
}

fn print_lines<T: serde::Serialize>(out: &Output, items: &[T]) {
    out.print(&items, || {
        items
            .iter()
            .map(|i| serde_json::to_string(i).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    });
}

pub(crate) async fn run(client: &ChainClient, cmd: &AuctionQuery, out: &Output) -> Result<()> {
    match cmd {
        AuctionQuery::Orders { id } => {
            let state = snapshot(client, &[auction_key::orders_prefix()]).await?;
            let orders = match id {
                Some(id) => match state.order(*id) {
                    Some(order) => vec![order],
                    None => return Err(absent(client, "order", *id).await),
                },
                None => state.orders(),
            };
            print_lines(out, &orders);
        }
        AuctionQuery::Bids { order_id } => {
            let state = snapshot(client, &[auction_key::all_bids_prefix()]).await?;
            print_lines(out, &state.bids(*order_id));
        }
        AuctionQuery::Leases { provider } => {
            let state = snapshot(client, &[auction_key::leases_and_indexes_prefix()]).await?;
            let leases = match provider {
                Some(p) => state.leases_of_provider(p),
                None => state.leases(),
            };
            print_lines(out, &leases);
        }
        AuctionQuery::Lease { id } => {
            let state = snapshot(
                client,
                &[
                    auction_key::module_prefix(),
                    staking_key::providers_prefix(),
                ],
            )
            .await?;
            let Some(lease) = state.lease(*id) else {
                return Err(absent(client, "lease", *id).await);
            };
            let order = state.order(lease.order_id);
            let result_url = lease.result_hash.and_then(|hash| {
                let endpoint = state.provider(&lease.provider)?.attrs.endpoint_url;
                Some(format!(
                    "{}/blob/{}",
                    endpoint.trim_end_matches('/'),
                    hex::encode(hash)
                ))
            });
            let value = serde_json::json!({
                "lease": lease,
                "job": order.as_ref().map(|o| &o.job),
                "result_url": result_url,
            });
            out.print(&value, || {
                format!(
                    "lease {} of order {}: {} by {} at {} ugpu{}",
                    lease.id,
                    lease.order_id,
                    lease.state.name(),
                    lease.provider,
                    lease.price,
                    result_url
                        .as_ref()
                        .map(|u| format!(", result at {u}"))
                        .unwrap_or_default()
                )
            });
        }
        AuctionQuery::OpenOrders { provider } => {
            let height = client.latest_height().await?;
            let state = snapshot(
                client,
                &[auction_key::module_prefix(), staking_key::module_prefix()],
            )
            .await?;
            print_lines(out, &state.open_orders_for(provider, height));
        }
        AuctionQuery::Reputation { provider } => {
            let height = client.latest_height().await?;
            let state =
                snapshot(client, &[gpuchain_reputation::state_key::module_prefix()]).await?;
            let value = serde_json::json!({
                "provider": provider,
                "score_ppm": state.score(provider, height),
                "history": state.reputation_history(provider),
            });
            out.print(&value, || {
                format!("{provider}: {} ppm", state.score(provider, height))
            });
        }
        AuctionQuery::Watch {
            order_id,
            timeout_blocks,
        } => super::watch::run(client, *order_id, *timeout_blocks, out).await?,
    }
    Ok(())
}
