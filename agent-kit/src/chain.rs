//! An agent's view of the chain: its signing key and address, signed submissions (one at a
//! time per key, so nonces never race) and the market reads every agent makes. An agent
//! wraps it with its own reads ([`agent_chain!`](crate::agent_chain)).

use std::path::Path;

use anyhow::{Context, Result};
use ed25519_dalek::SigningKey;
use gpuchain_auction::{state_key, Lease, Order};
use gpuchain_client::keys::Keystore;
use gpuchain_client::{ChainClient, TxOutcome};
use gpuchain_serving::{Claim, ServingLease};
use gpuchain_staking::Provider;
use gpuchain_tx::Msg;
use gpuchain_types::{Address, Amount, StateRead};

/// Times a transaction refused by the mempool for its nonce is signed again.
const NONCE_TRIES: u32 = 3;

/// Whether `outcome` was refused for its nonce, in the mempool or its block (either way
/// nothing of it was applied, fee included).
fn refused_for_its_nonce(outcome: &TxOutcome) -> bool {
    use gpuchain_types::ModuleError;
    let bad_nonce = gpuchain_tx::TxError::BadNonce {
        got: 0,
        expected: 0,
    };
    outcome.codespace == bad_nonce.codespace() && outcome.code == bad_nonce.code()
}

/// Client, key, address and the memo the agent's transactions carry.
#[derive(Clone)]
pub struct AgentChain {
    /// The node's RPC with proven reads.
    pub client: ChainClient,
    key: SigningKey,
    /// The key's account.
    pub address: Address,
    memo: &'static str,
    /// Held while a transaction of this key is in flight, by every clone.
    submitting: std::sync::Arc<tokio::sync::Mutex<()>>,
}

impl AgentChain {
    /// Opens the key `<home>/keys/<name>.json` (passphrase from `GPUCHAIN_PASSPHRASE`);
    /// transactions carry `memo` (the agent's name).
    pub fn connect(node: &str, home: &Path, name: &str, memo: &'static str) -> Result<AgentChain> {
        let pass = std::env::var("GPUCHAIN_PASSPHRASE").ok();
        let key = Keystore::open(&home.join("keys"))?
            .signing_key(name, pass.as_deref())
            .with_context(|| format!("loading key {name:?} from {}", home.display()))?;
        let address = Address::from_public_key(&key.verifying_key().to_bytes());
        Ok(AgentChain {
            client: ChainClient::new(node)?,
            key,
            address,
            memo,
            submitting: std::sync::Arc::default(),
        })
    }

    /// The agent key's signature over `bytes` (acknowledgements and requests off chain).
    pub fn sign(&self, bytes: &[u8]) -> [u8; 64] {
        use ed25519_dalek::Signer;
        self.key.sign(bytes).to_bytes()
    }

    /// The agent key's public half.
    pub fn public_key(&self) -> [u8; 32] {
        self.key.verifying_key().to_bytes()
    }

    /// Signs and submits one message with the agent's memo; waits for its block.
    pub async fn submit(&self, msg: Msg) -> Result<TxOutcome> {
        self.submit_with_memo(msg, self.memo).await
    }

    /// Signs and submits one message with `memo`; waits for its block.
    /// One transaction of the agent's is in flight at a time, so its tasks never sign two
    /// with one nonce; one the mempool refused for its nonce (another process signing with
    /// the key) is signed again with the next nonce, a few times.
    pub async fn submit_with_memo(&self, msg: Msg, memo: &str) -> Result<TxOutcome> {
        let _turn = self.submitting.lock().await;
        let mut tries = 0;
        loop {
            let outcome = self
                .client
                .submit(&self.key, vec![msg.clone()], memo)
                .await?;
            tries += 1;
            if !refused_for_its_nonce(&outcome) || tries >= NONCE_TRIES {
                return Ok(outcome);
            }
            tracing::warn!(log = %outcome.log, "transaction refused for its nonce: signing it again");
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
    }

    /// The account's spendable balance.
    pub async fn balance(&self) -> Result<Amount> {
        self.client.balance(&self.address).await
    }

    /// One order.
    pub async fn order(&self, id: u64) -> Result<Option<Order>> {
        self.client.get(&state_key::order(id)).await
    }

    /// One lease.
    pub async fn lease(&self, id: u64) -> Result<Option<Lease>> {
        self.client.get(&state_key::lease(id)).await
    }

    /// Every lease of an order, by id.
    pub async fn leases_of_order(&self, order_id: u64) -> Result<Vec<Lease>> {
        let mut out = Vec::new();
        for id in self
            .lease_ids_under(&state_key::leases_by_order_prefix(order_id))
            .await?
        {
            if let Some(l) = self.lease(id).await? {
                out.push(l);
            }
        }
        out.sort_by_key(|l| l.id);
        Ok(out)
    }

    /// One serving lease.
    pub async fn serving_lease(&self, id: u64) -> Result<Option<ServingLease>> {
        self.client
            .get(&gpuchain_serving::state_key::lease(id))
            .await
    }

    /// One claim on a serving lease.
    pub async fn serving_claim(&self, id: u64) -> Result<Option<Claim>> {
        self.client
            .get(&gpuchain_serving::state_key::claim(id))
            .await
    }

    /// A provider's registration (its blob server's endpoint, hardware, bond).
    pub async fn provider(&self, operator: &Address) -> Result<Option<Provider>> {
        self.client
            .get(&gpuchain_staking::state_key::provider(operator))
            .await
    }

    /// The lease ids of every key under `prefix`, a prefix of one of x/auction's lease
    /// indexes (by order or by provider).
    pub async fn lease_ids_under(&self, prefix: &str) -> Result<Vec<u64>> {
        let snap = self.client.snapshot(prefix).await?;
        Ok(snap
            .prefix_raw(prefix)
            .into_iter()
            .filter_map(|(k, _)| state_key::indexed_lease_id(&k))
            .collect())
    }

    /// Every value under `prefix` that decodes as `T`.
    pub async fn all<T: borsh::BorshDeserialize>(&self, prefix: &str) -> Result<Vec<T>> {
        let snap = self.client.snapshot(prefix).await?;
        Ok(snap
            .prefix_raw(prefix)
            .into_iter()
            .filter_map(|(_, v)| borsh::from_slice::<T>(&v).ok())
            .collect())
    }
}

/// Declares an agent's chain handle `$name`: the kit's [`AgentChain`] (reached through
/// `Deref`) whose transactions carry `$memo`, opened from the `[chain]` and `[key]` sections
/// (`open`) or from a node, a gpuchaind home and a key name (`connect`). The agent adds its
/// own reads in an `impl $name` of its own.
#[macro_export]
macro_rules! agent_chain {
    ($(#[$attr:meta])* $vis:vis struct $name:ident, memo = $memo:literal) => {
        $(#[$attr])*
        #[derive(Clone)]
        $vis struct $name($crate::chain::AgentChain);

        impl ::std::ops::Deref for $name {
            type Target = $crate::chain::AgentChain;

            fn deref(&self) -> &$crate::chain::AgentChain {
                &self.0
            }
        }

        impl $name {
            /// Opens the key `<home>/keys/<name>.json` (passphrase from `GPUCHAIN_PASSPHRASE`).
            $vis fn connect(
                node: &str,
                home: &::std::path::Path,
                name: &str,
            ) -> ::anyhow::Result<$name> {
                $crate::chain::AgentChain::connect(node, home, name, $memo).map($name)
            }

            /// Opens the configured key on the configured node.
            $vis fn open(
                chain: &$crate::config::ChainConfig,
                key: &$crate::config::KeyConfig,
            ) -> ::anyhow::Result<$name> {
                $name::connect(&chain.node, &key.home, &key.name)
            }
        }
    };
}
