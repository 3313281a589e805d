//! The provider's view of the chain: the agent kit's chain handle (key, submissions, market
//! reads) and the reads only a provider makes.

use anyhow::Result;
use gpuchain_auction::{state_key, AuctionMsg, Bid, Order, OrderState};
use gpuchain_client::TxOutcome;
use gpuchain_staking::Provider;
use gpuchain_tx::Msg;

gpuchain_agent_kit::agent_chain!(
    /// The kit's handle, with the provider's memo.
    pub(crate) struct Chain, memo = "gpuchain-provider"
);

impl Chain {
    /// Submits an auction message.
    pub(crate) async fn auction(&self, msg: AuctionMsg) -> Result<TxOutcome> {
        self.submit(Msg::Auction(msg)).await
    }

    pub(crate) async fn my_bid(&self, order_id: u64) -> Result<Option<Bid>> {
        self.client
            .get(&state_key::bid(order_id, &self.address))
            .await
    }

    /// This provider's registration.
    pub(crate) async fn me(&self) -> Result<Option<Provider>> {
        self.provider(&self.address).await
    }

    /// Ids of every lease this provider ever won.
    pub(crate) async fn my_lease_ids(&self) -> Result<Vec<u64>> {
        self.lease_ids_under(&state_key::leases_by_provider_prefix(&self.address))
            .await
    }

    /// Orders open now (a start-up scan; afterwards new orders come from events).
    pub(crate) async fn open_orders(&self) -> Result<Vec<Order>> {
        let all: Vec<Order> = self.all(state_key::orders_prefix()).await?;
        Ok(all
            .into_iter()
            .filter(|o| o.state == OrderState::Open)
            .collect())
    }
}
