//! The agent's view of the chain: a signing key and its address, signed submissions (one at
//! a time per key, so nonces never race), and the typed reads the agent needs.

use std::path::Path;

use anyhow::{Context, Result};
use ed25519_dalek::SigningKey;
use gpuchain_auction::{state_key, Lease, Order};
use gpuchain_client::keys::Keystore;
use gpuchain_client::{ChainClient, TxOutcome};
use gpuchain_staking::Provider;
use gpuchain_tx::Msg;
use gpuchain_types::{Address, StateRead};
use gpuchain_verify::{Case, Challenge, Verifier, VerifyMsg, VerifyParams};

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

    /// Signs and submits one message; waits for its block. Ringer posters leave the memo
    /// empty like any client would.
    pub(crate) async fn submit(&self, msg: Msg, memo: &str) -> Result<TxOutcome> {
        self.client.submit(&self.key, vec![msg], memo).await
    }

    /// Submits a verify message.
    pub(crate) async fn verify(&self, msg: VerifyMsg) -> Result<TxOutcome> {
        self.submit(Msg::Verify(msg), "gpuchain-verifier").await
    }

    pub(crate) async fn order(&self, id: u64) -> Result<Option<Order>> {
        self.client.get(&state_key::order(id)).await
    }

    pub(crate) async fn lease(&self, id: u64) -> Result<Option<Lease>> {
        self.client.get(&state_key::lease(id)).await
    }

    /// Every lease of an order.
    pub(crate) async fn leases_of_order(&self, order_id: u64) -> Result<Vec<Lease>> {
        let prefix = state_key::leases_by_order_prefix(order_id);
        let snap = self.client.snapshot(&prefix).await?;
        let ids: Vec<u64> = snap
            .prefix_raw(&prefix)
            .into_iter()
            .filter_map(|(k, _)| k.rsplit('/').next()?.parse().ok())
            .collect();
        let mut out = Vec::new();
        for id in ids {
            if let Some(l) = self.lease(id).await? {
                out.push(l);
            }
        }
        out.sort_by_key(|l| l.id);
        Ok(out)
    }

    pub(crate) async fn provider(&self, operator: &Address) -> Result<Option<Provider>> {
        self.client
            .get(&gpuchain_staking::state_key::provider(operator))
            .await
    }

    pub(crate) async fn me(&self) -> Result<Option<Verifier>> {
        self.client
            .get(&gpuchain_verify::state_key::verifier(&self.address))
            .await
    }

    pub(crate) async fn case(&self, lease_id: u64) -> Result<Option<Case>> {
        self.client
            .get(&gpuchain_verify::state_key::case(lease_id))
            .await
    }

    pub(crate) async fn verify_params(&self) -> Result<VerifyParams> {
        Ok(self
            .client
            .get(gpuchain_verify::state_key::params())
            .await?
            .unwrap_or_default())
    }

    /// Every case (a start-up scan for assignments made while the agent was down).
    pub(crate) async fn cases(&self) -> Result<Vec<Case>> {
        self.all(gpuchain_verify::state_key::cases_prefix()).await
    }

    /// Every committed, unrevealed challenge.
    pub(crate) async fn challenges(&self) -> Result<Vec<Challenge>> {
        self.all(gpuchain_verify::state_key::challenges_prefix())
            .await
    }

    /// Every order (a restart looks for a ringer order sent just before a crash).
    pub(crate) async fn orders(&self) -> Result<Vec<Order>> {
        self.all(state_key::orders_prefix()).await
    }

    async fn all<T: borsh::BorshDeserialize>(&self, prefix: &str) -> Result<Vec<T>> {
        let snap = self.client.snapshot(prefix).await?;
        Ok(snap
            .prefix_raw(prefix)
            .into_iter()
            .filter_map(|(_, v)| borsh::from_slice::<T>(&v).ok())
            .collect())
    }
}
