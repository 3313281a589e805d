//! `query auction watch <order>`: follows an order block by block and prints every
//! transition (new bids, clearing, each lease's state) until the order is settled, cancelled
//! or expired.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Result};
use gpuchain_auction::{state_key, AuctionRead, Lease, Order, OrderState};
use gpuchain_client::ChainClient;
use gpuchain_types::MemState;
use serde::Serialize;

use super::Output;

/// One change seen between two blocks.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(crate) enum Transition {
    /// The order moved to `state`.
    Order {
        height: u64,
        order_id: u64,
        state: OrderState,
        clearing_price: Option<u128>,
    },
    /// A provider bid.
    Bid {
        height: u64,
        order_id: u64,
        provider: String,
        price: u128,
    },
    /// A lease moved to `state`.
    Lease {
        height: u64,
        lease_id: u64,
        provider: String,
        state: &'static str,
        result_hash: Option<String>,
    },
}

impl Transition {
    fn text(&self) -> String {
        match self {
            Transition::Order {
                height,
                order_id,
                state,
                clearing_price,
            } => {
                let price = clearing_price
                    .map(|p| format!(" at {p} ugpu per replica"))
                    .unwrap_or_default();
                format!("h={height} order {order_id} {state:?}{price}")
            }
            Transition::Bid {
                height,
                provider,
                price,
                ..
            } => format!("h={height} bid {price} ugpu from {provider}"),
            Transition::Lease {
                height,
                lease_id,
                provider,
                state,
                result_hash,
            } => {
                let hash = result_hash
                    .as_ref()
                    .map(|h| format!(" result {h}"))
                    .unwrap_or_default();
                format!("h={height} lease {lease_id} ({provider}) {state}{hash}")
            }
        }
    }
}

/// What was last seen of the order, to diff against the next block.
#[derive(Default)]
pub(crate) struct Seen {
    order: Option<OrderState>,
    bids: BTreeMap<String, u128>,
    leases: BTreeMap<u64, &'static str>,
}

impl Seen {
    /// Transitions from what was seen to `state` at `height`, and remembers them.
    pub(crate) fn diff(&mut self, state: &MemState, order: &Order, height: u64) -> Vec<Transition> {
        let mut out = Vec::new();
        for bid in state.bids(order.id) {
            let key = bid.provider.to_string();
            if self.bids.insert(key.clone(), bid.price).is_none() {
                out.push(Transition::Bid {
                    height,
                    order_id: order.id,
                    provider: key,
                    price: bid.price,
                });
            }
        }
        let order_changed = (self.order != Some(order.state)).then_some(Transition::Order {
            height,
            order_id: order.id,
            state: order.state,
            clearing_price: order.clearing_price,
        });
        self.order = Some(order.state);
        // An order that clears comes before the leases it creates; one that ends comes after
        // the lease transitions that ended it, so the last line is always the order's end.
        let ends = is_over(order);
        if !ends {
            out.extend(order_changed.clone());
        }
        for lease in state.leases_of_order(order.id) {
            let name = lease.state.name();
            if self.leases.insert(lease.id, name) != Some(name) {
                out.push(lease_transition(&lease, height));
            }
        }
        if ends {
            out.extend(order_changed);
        }
        out
    }
}

fn lease_transition(lease: &Lease, height: u64) -> Transition {
    Transition::Lease {
        height,
        lease_id: lease.id,
        provider: lease.provider.to_string(),
        state: lease.state.name(),
        result_hash: lease.result_hash.map(hex::encode),
    }
}

/// Whether nothing more will happen to the order.
pub(crate) fn is_over(order: &Order) -> bool {
    order.state.is_closed()
}

async fn order_state(client: &ChainClient, order_id: u64) -> Result<(MemState, Option<Order>)> {
    let mut state = MemState::new();
    for prefix in [
        state_key::order(order_id),
        state_key::bids_prefix(order_id),
        state_key::leases_and_indexes_prefix().to_string(),
    ] {
        let part = client.snapshot(&prefix).await?;
        state.apply(
            part.entries()
                .iter()
                .map(|(k, v)| (k.clone(), Some(v.clone())))
                .collect(),
        );
    }
    let order = state.order(order_id);
    Ok((state, order))
}

/// Prints transitions until the order is over or `timeout_blocks` pass.
pub(crate) async fn run(
    client: &ChainClient,
    order_id: u64,
    timeout_blocks: u64,
    out: &Output,
) -> Result<()> {
    let mut seen = Seen::default();
    let mut height = client.latest_height().await?;
    let last = height.saturating_add(timeout_blocks);
    loop {
        let (state, order) = order_state(client, order_id).await?;
        let Some(order) = order else {
            bail!("order {order_id} does not exist at height {height}");
        };
        for t in seen.diff(&state, &order, height) {
            out.line(&t, || t.text());
        }
        if is_over(&order) {
            return Ok(());
        }
        if height >= last {
            bail!(
                "order {order_id} is still {:?} after {timeout_blocks} blocks",
                order.state
            );
        }
        height = height.saturating_add(1);
        client
            .wait_for_height(height, Duration::from_secs(60))
            .await?;
    }
}
