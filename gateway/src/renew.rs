//! Keeping the models the gateway opened orders for served past their leases' end: a
//! serving order's leases serve for its blocks and then end, so `--renew-before-blocks` blocks
//! before they do the gateway opens the same order again, routes over the new leases once it
//! clears (their receipts kept and acknowledged like the first ones'), and stops routing over
//! a lease once it no longer serves (ended, or dropped after a report). An order its client
//! ended before its term (from the CLI, or the gateway itself on its way out) is not renewed,
//! and once the gateway stops no replacement is opened.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use gpuchain_agent_kit::chain::AgentChain;
use gpuchain_serving::{ServingLease, ServingLeaseState, ServingOrder, ServingOrderState};

use crate::lease::Leases;
use crate::orders::{self, OrderSpec};
use crate::pool::Pool;

/// One model kept served: the order serving it now and its replacement, once opened.
struct Kept {
    spec: OrderSpec,
    order: u64,
    next: Option<u64>,
    /// No replacement is opened before this height (after one that cleared without leases).
    retry_at: u64,
    /// Replacements in a row that cleared without a lease.
    fruitless: u32,
    /// No longer renewed: ended by its client, or too many fruitless replacements.
    given_up: bool,
}

/// Replacements in a row that may clear without a lease before the gateway stops opening
/// them: each costs a transaction fee, and no provider bidding at the ceiling will not
/// change by asking again and again.
const MOST_FRUITLESS: u32 = 3;

/// The renewal task's view.
pub(crate) struct Renewals {
    chain: AgentChain,
    pool: Arc<Pool>,
    leases: Arc<Leases>,
    before: u64,
    kept: Vec<Kept>,
    /// Every order the gateway opened, replacements included (ended when it stops).
    opened: Arc<Mutex<Vec<u64>>>,
}

impl Renewals {
    /// Keeps each `(spec, order)` served, opening a replacement `before` blocks before its
    /// leases end.
    pub(crate) fn new(
        chain: AgentChain,
        pool: Arc<Pool>,
        leases: Arc<Leases>,
        before: u64,
        orders: Vec<(OrderSpec, u64)>,
        opened: Arc<Mutex<Vec<u64>>>,
    ) -> Renewals {
        let kept = orders
            .into_iter()
            .map(|(spec, order)| Kept {
                spec,
                order,
                next: None,
                retry_at: 0,
                fruitless: 0,
                given_up: false,
            })
            .collect();
        Renewals {
            chain,
            pool,
            leases,
            before,
            kept,
            opened,
        }
    }

    /// Renews and retires, once a second, until `stopped` holds true. A step runs with the
    /// flag locked, so whoever sets it waits for the step under way, and every order opened
    /// is then in `opened`.
    pub(crate) async fn run(mut self, stopped: Arc<tokio::sync::Mutex<bool>>) {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let stopped = stopped.lock().await;
            if *stopped {
                return;
            }
            if let Err(e) = self.step().await {
                tracing::warn!(error = %format!("{e:#}"), "renewing serving orders");
            }
        }
    }

    async fn order(&self, id: u64) -> Result<ServingOrder> {
        self.chain
            .client
            .get(&gpuchain_serving::state_key::order(id))
            .await?
            .with_context(|| format!("serving order {id} does not exist"))
    }

    /// One order's failure (a node's RPC dropping a connection) neither holds up the
    /// others nor the retirement of ended leases; the first error is returned after both.
    async fn step(&mut self) -> Result<()> {
        let height = self.chain.client.latest_height().await?;
        let mut first_error = None;
        for i in 0..self.kept.len() {
            if let Err(e) = self.renew(i, height).await {
                first_error.get_or_insert(e);
            }
        }
        self.retire(height).await?;
        first_error.map_or(Ok(()), Err)
    }

    /// Opens the replacement of kept order `i` when its leases are about to end, and routes
    /// over the replacement's leases once it clears.
    async fn renew(&mut self, i: usize, height: u64) -> Result<()> {
        let Some(k) = self.kept.get(i) else {
            return Ok(());
        };
        let (spec, current, next, retry_at) = (k.spec.clone(), k.order, k.next, k.retry_at);
        if k.given_up {
            return Ok(());
        }
        let Some(next) = next else {
            let order = self.order(current).await?;
            if order.ended_early() {
                tracing::info!(
                    order = current,
                    model = %spec.model,
                    "the order was ended by its client: not renewed"
                );
                if let Some(k) = self.kept.get_mut(i) {
                    k.given_up = true;
                }
                return Ok(());
            }
            let due =
                order.end_height != 0 && height.saturating_add(self.before) >= order.end_height;
            if due && height >= retry_at {
                let id = orders::open(&self.chain, std::slice::from_ref(&spec))
                    .await?
                    .first()
                    .copied()
                    .context("no order opened")?;
                tracing::info!(
                    order = current,
                    ends = order.end_height,
                    replacement = id,
                    model = %spec.model,
                    "the order's leases end soon: opened its replacement"
                );
                if let Ok(mut opened) = self.opened.lock() {
                    opened.push(id);
                }
                if let Some(k) = self.kept.get_mut(i) {
                    k.next = Some(id);
                }
            }
            return Ok(());
        };
        let order = self.order(next).await?;
        if order.state == ServingOrderState::Bidding {
            return Ok(());
        }
        let found = orders::lease_upstreams(&self.chain, &order).await?;
        let Some(k) = self.kept.get_mut(i) else {
            return Ok(());
        };
        k.next = None;
        if found.is_empty() {
            // Try again once a bid window has passed, a few times.
            k.retry_at = height.saturating_add(spec.bid_window).saturating_add(1);
            k.fruitless = k.fruitless.saturating_add(1);
            if k.fruitless >= MOST_FRUITLESS {
                k.given_up = true;
                tracing::error!(
                    order = next,
                    model = %spec.model,
                    tries = k.fruitless,
                    "no provider bid on the replacement orders: the model is no longer \
                     renewed (open an order with a higher ceiling)"
                );
            } else {
                tracing::warn!(
                    order = next,
                    model = %spec.model,
                    "the replacement order cleared without a lease; opening another later"
                );
            }
            return Ok(());
        }
        k.fruitless = 0;
        k.order = next;
        for u in &found {
            if let Some(lease) = u.lease {
                self.leases.add(lease, &u.url).await?;
            }
        }
        self.pool.add(found).await;
        Ok(())
    }

    /// Stops routing over leases that no longer serve.
    async fn retire(&self, height: u64) -> Result<()> {
        let mut ended = Vec::new();
        for u in self.pool.upstreams() {
            let Some(id) = u.spec.lease else {
                continue;
            };
            let lease: Option<ServingLease> = self
                .chain
                .client
                .get(&gpuchain_serving::state_key::lease(id))
                .await?;
            let serving = lease
                .is_some_and(|l| l.state == ServingLeaseState::Serving && height <= l.end_height);
            if !serving {
                ended.push(id);
            }
        }
        if !ended.is_empty() {
            let retired = self.pool.retire(&ended);
            tracing::info!(leases = ?ended, upstreams = retired, "leases no longer serve: not routed to");
        }
        Ok(())
    }
}
