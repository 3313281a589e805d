//! The bid engine: eligibility, optional blob prefetch, pricing, and a bid recorded durably
//! before it is sent; a capacity slot is held from then until the auction is over.

use anyhow::Result;
use gpuchain_auction::{AuctionMsg, MsgBid, Order, OrderState};

use super::{execute, Agent};
use crate::attrs::price_class;
use crate::eligibility::{check, Ability};
use crate::pricing::{quote, Quote};
use crate::state::{BidRecord, BidStatus};

impl Agent {
    fn skip(&mut self, order_id: u64, reason: &str) {
        tracing::info!(order_id, reason, "skipping order");
        self.state.counters.orders_skipped += 1;
    }

    /// Decides on a newly seen order and bids when it should.
    pub(super) async fn consider(&mut self, order_id: u64) -> Result<()> {
        if self.state.bids.contains_key(&order_id) {
            return Ok(()); // Already bid (or tried): never twice.
        }
        let order = match self.chain.order(order_id).await {
            Ok(Some(o)) => o,
            Ok(None) => return Ok(()),
            Err(e) => {
                tracing::warn!(order_id, error = %e, "cannot read order");
                return Ok(());
            }
        };
        if order.client == self.chain.address {
            return Ok(());
        }
        let ability = Ability {
            attrs: &self.attrs,
            capacity: &self.config.capacity,
            memory_bytes: gpuchain_compute::job::available_memory_bytes(self.backend),
            slots_used: self.state.slots_used(),
            height: self.height,
        };
        if let Err(reason) = check(&order, &ability) {
            self.skip(order_id, &reason);
            return Ok(());
        }
        let class = price_class(&self.attrs);
        let price = match quote(&self.config.pricing, &class, self.attrs.gpu_count, &order) {
            Ok(Quote::Bid(p)) => p,
            Ok(Quote::Pass(reason)) => {
                self.skip(order_id, &reason);
                return Ok(());
            }
            Err(e) => {
                self.skip(order_id, &e.to_string());
                return Ok(());
            }
        };
        let mut prefetch_seconds = 0.0;
        if self.config.provider.prefetch_before_bid {
            match execute::fetch(&order.job, &self.fetcher).await {
                Ok(s) => prefetch_seconds = s,
                Err(reason) => {
                    self.skip(order_id, &reason);
                    return Ok(());
                }
            }
        }
        self.bid(&order, price, prefetch_seconds).await
    }

    async fn bid(&mut self, order: &Order, price: u128, prefetch_seconds: f64) -> Result<()> {
        self.state.bids.insert(
            order.id,
            BidRecord {
                order_id: order.id,
                price,
                status: BidStatus::Submitting,
                order_height: order.created_height,
                bid_end_height: order.bid_end_height,
                bid_height: 0,
                prefetch_seconds,
            },
        );
        // Durable before the transaction leaves: a restart never sends it again.
        self.save()?;
        let outcome = self
            .chain
            .auction(AuctionMsg::Bid(MsgBid {
                order_id: order.id,
                price,
            }))
            .await;
        let Some(record) = self.state.bids.get_mut(&order.id) else {
            return Ok(());
        };
        match outcome.and_then(|o| o.ok()) {
            Ok(o) => {
                record.status = BidStatus::Placed;
                record.bid_height = o.height;
                self.state.counters.bids += 1;
                tracing::info!(order_id = order.id, price, height = o.height, "bid placed");
            }
            Err(e) => {
                record.status = BidStatus::Failed;
                self.state.counters.bids_failed += 1;
                tracing::warn!(order_id = order.id, error = %format!("{e:#}"), "bid failed");
            }
        }
        self.save()
    }

    /// The order cleared or closed: a bid that did not win releases its slot.
    pub(super) fn auction_over(&mut self, order_id: u64) {
        let won = self.state.leases.values().any(|l| l.order_id == order_id);
        if let Some(bid) = self.state.bids.get_mut(&order_id) {
            if bid.reserves() {
                if won {
                    bid.status = BidStatus::Won;
                } else {
                    bid.status = BidStatus::Lost;
                    self.state.counters.losses += 1;
                    tracing::info!(order_id, "auction lost; capacity released");
                }
            }
        }
    }

    /// Bids whose window is well over without a clearing seen (missed events, reopened
    /// orders): ask the chain.
    pub(super) async fn check_pending_bids(&mut self) -> Result<()> {
        let due: Vec<u64> = self
            .state
            .bids
            .values()
            .filter(|b| b.reserves() && self.height > b.bid_end_height.saturating_add(1))
            .map(|b| b.order_id)
            .collect();
        for order_id in due {
            match self.chain.order(order_id).await {
                Ok(Some(o)) if o.state == OrderState::Open => {
                    if let Some(b) = self.state.bids.get_mut(&order_id) {
                        b.bid_end_height = o.bid_end_height; // Reopened.
                    }
                }
                Ok(_) => {
                    self.adopt_my_leases().await?;
                    self.auction_over(order_id);
                }
                Err(e) => tracing::warn!(order_id, error = %e, "cannot read order"),
            }
        }
        Ok(())
    }
}
