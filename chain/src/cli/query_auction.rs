//! `query auction …`: orders, bids, leases and reputation, read with the modules' own
//! typed views over state fetched by prefix.

use anyhow::Result;
use gpuchain_auction::AuctionRead;
use gpuchain_client::ChainClient;
use gpuchain_reputation::ReputationRead;
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
            let state = snapshot(client, &["auction/orders/"]).await?;
            let orders = match id {
                Some(id) => state.order(*id).into_iter().collect(),
                None => state.orders(),
            };
            print_lines(out, &orders);
        }
        AuctionQuery::Bids { order_id } => {
            let state = snapshot(client, &["auction/bids/"]).await?;
            print_lines(out, &state.bids(*order_id));
        }
        AuctionQuery::Leases { provider } => {
            let state = snapshot(client, &["auction/leases"]).await?;
            let leases = match provider {
                Some(p) => state.leases_of_provider(p),
                None => state.leases(),
            };
            print_lines(out, &leases);
        }
        AuctionQuery::OpenOrders { provider } => {
            let height = client.latest_height().await?;
            let state = snapshot(client, &["auction/", "staking/"]).await?;
            print_lines(out, &state.open_orders_for(provider, height));
        }
        AuctionQuery::Reputation { provider } => {
            let height = client.latest_height().await?;
            let state = snapshot(client, &["reputation/"]).await?;
            let value = serde_json::json!({
                "provider": provider,
                "score_ppm": state.score(provider, height),
                "history": state.reputation_history(provider),
            });
            out.print(&value, || {
                format!("{provider}: {} ppm", state.score(provider, height))
            });
        }
    }
    Ok(())
}
