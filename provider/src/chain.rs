//! The agent's view of the chain: its signing key and address, signed submissions (one at
//! a time, so nonces never race), and the typed reads it needs.

use std::path::Path;

use anyhow::{Context, Result};
use ed25519_dalek::SigningKey;
use gpuchain_auction::{state_key, AuctionMsg, Bid, Lease, Order, OrderState};
use gpuchain_client::keys::Keystore;
use gpuchain_client::{ChainClient, TxOutcome};
use gpuchain_staking::Provider;
use gpuchain_tx::Msg;
use gpuchain_types::{Address, Amount};

/// Client, key and address.
#[derive(Clone)]
pub(crate) struct Chain {
    pub(crate) client: ChainClient,
    key: SigningKey,
    pub(crate) address: Address,
}

impl Chain {
    /// Opens the key `<home>/keys/<name>.json` (passphrase from `GPUCHAIN_PASSPHRASE`).
    pub(crate) fn connect(node: &str, home: &Path, name: &str) -> Result<Chain> {
        let pass = std::env::var("GPUCHAIN_PASSPHRASE").ok();
        let key = Keystore::open(&home.join("keys"))?
            .signing_key(name, pass.as_deref())
            .with_context(|| format!("loading key {name:?} from {}", home.display()))?;
        let address = Address::from_public_key(&key.verifying_key().to_bytes());
        Ok(Chain {
            client: ChainClient::new(node)?,
            key,
            address,
        })
    }

    /// Signs and submits one message; waits for its block.
    pub(crate) async fn submit(&self, msg: Msg) -> Result<TxOutcome> {
        self.client
            .submit(&self.key, vec![msg], "gpuchain-provider")
            .await
    }

    /// Submits an auction message.
    pub(crate) async fn auction(&self, msg: AuctionMsg) -> Result<TxOutcome> {
        self.submit(Msg::Auction(msg)).await
    }

    pub(crate) async fn order(&self, id: u64) -> Result<Option<Order>> {
        self.client.get(&state_key::order(id)).await
    }

    pub(crate) async fn lease(&self, id: u64) -> Result<Option<Lease>> {
        self.client.get(&state_key::lease(id)).await
    }

    pub(crate) async fn my_bid(&self, order_id: u64) -> Result<Option<Bid>> {
        self.client
            .get(&state_key::bid(order_id, &self.address))
            .await
    }

    pub(crate) async fn provider(&self) -> Result<Option<Provider>> {
        self.client
            .get(&gpuchain_staking::state_key::provider(&self.address))
            .await
    }

    /// Another provider's registration (its blob server's endpoint).
    pub(crate) async fn provider_at(&self, address: &Address) -> Result<Option<Provider>> {
        self.client
            .get(&gpuchain_staking::state_key::provider(address))
            .await
    }

    pub(crate) async fn balance(&self) -> Result<Amount> {
        self.client.balance(&self.address).await
    }

    /// Ids of every lease this provider ever won.
    pub(crate) async fn my_lease_ids(&self) -> Result<Vec<u64>> {
        self.ids_under(&state_key::leases_by_provider_prefix(&self.address))
            .await
    }

    /// Every lease of an order.
    pub(crate) async fn leases_of_order(&self, order_id: u64) -> Result<Vec<Lease>> {
        let mut out = Vec::new();
        for id in self
            .ids_under(&state_key::leases_by_order_prefix(order_id))
            .await?
        {
            if let Some(l) = self.lease(id).await? {
                out.push(l);
            }
        }
        Ok(out)
    }

    async fn ids_under(&self, prefix: &str) -> Result<Vec<u64>> {
        use gpuchain_types::StateRead;
        let snap = self.client.snapshot(prefix).await?;
        Ok(snap
            .prefix_raw(prefix)
            .into_iter()
            .filter_map(|(k, _)| k.rsplit('/').next()?.parse().ok())
            .collect())
    }

    /// Orders open now (a start-up scan; afterwards new orders come from events).
    pub(crate) async fn open_orders(&self) -> Result<Vec<Order>> {
        use gpuchain_types::StateRead;
        let snap = self.client.snapshot(state_key::orders_prefix()).await?;
        Ok(snap
            .prefix_raw(state_key::orders_prefix())
            .into_iter()
            .filter_map(|(_, v)| borsh::from_slice::<Order>(&v).ok())
            .filter(|o| o.state == OrderState::Open)
            .collect())
    }
}
