//! CometBFT RPC for gpuchain: broadcast and wait for inclusion, typed and proven queries.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use borsh::BorshDeserialize;
use ed25519_dalek::SigningKey;
use gpuchain_tx::{Msg, Tx, TxParams};
use gpuchain_types::{Address, Amount, PROOF_OP_TYPE};
use serde::Serialize;
use tendermint_rpc::client::CompatMode;
use tendermint_rpc::{Client, HttpClient, HttpClientUrl};

use crate::{paths, verify_proof, LightClient};
use gpuchain_tx::build_signed_tx;

/// How a broadcast transaction ended.
#[derive(Clone, Debug, Serialize)]
pub struct TxOutcome {
    /// Upper-case hex sha256 of the tx bytes, as CometBFT indexes it.
    pub hash: String,
    /// Block that included it; 0 if CheckTx refused it.
    pub height: u64,
    /// 0 on success.
    pub code: u32,
    /// Module of the error, empty on success.
    pub codespace: String,
    /// Error explanation, empty on success.
    pub log: String,
    /// Gas consumed.
    pub gas_used: i64,
    /// Events as `(type, [(key, value)])`.
    pub events: Vec<(String, Vec<(String, String)>)>,
}

impl TxOutcome {
    /// Fails with the code and log unless the transaction succeeded.
    pub fn ok(self) -> Result<TxOutcome> {
        if self.code == 0 {
            Ok(self)
        } else {
            bail!(
                "transaction {} failed: {}:{}: {}",
                self.hash,
                self.codespace,
                self.code,
                self.log
            )
        }
    }

    /// First value of attribute `key` in the first event of type `kind`.
    pub fn event_attr(&self, kind: &str, key: &str) -> Option<&str> {
        self.events
            .iter()
            .filter(|(t, _)| t == kind)
            .flat_map(|(_, attrs)| attrs.iter())
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The first event of the module's typed event `T` the transaction emitted (e.g.
    /// `gpuchain_auction::OrderPostedEvent`, whose `order_id` is the new order's id).
    pub fn event<T: gpuchain_types::TypedEvent>(&self) -> Option<T> {
        self.events.iter().find_map(|(kind, attrs)| {
            T::decode(kind, |key| {
                attrs
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| v.as_str())
            })
        })
    }
}

/// A value proven against the app hash in a block header.
#[derive(Clone, Debug)]
pub struct VerifiedValue {
    /// The stored bytes, `None` if the key is absent (proven absent).
    pub value: Option<Vec<u8>>,
    /// State version (block height) the value is from.
    pub height: u64,
    /// App hash of that state, from header `height + 1`.
    pub app_hash: [u8; 32],
}

/// A connection to one CometBFT node.
#[derive(Clone)]
pub struct ChainClient {
    http: HttpClient,
    url: String,
    light: Option<Arc<tokio::sync::Mutex<LightClient>>>,
}

fn abci_code_ok(code: &tendermint::abci::Code, log: &str, what: &str) -> Result<()> {
    if code.is_ok() {
        Ok(())
    } else {
        bail!("{what} failed with code {}: {log}", code.value())
    }
}

impl ChainClient {
    /// Connects to `url`, e.g. `http://127.0.0.1:26657`.
    pub fn new(url: &str) -> Result<ChainClient> {
        let parsed =
            HttpClientUrl::from_str(url).map_err(|e| anyhow!("bad node url {url:?}: {e}"))?;
        let http = HttpClient::builder(parsed)
            .compat_mode(CompatMode::V0_38)
            .build()
            .map_err(|e| anyhow!("creating RPC client for {url}: {e}"))?;
        Ok(ChainClient {
            http,
            url: url.to_string(),
            light: None,
        })
    }

    /// Checks the headers behind proven queries with `light` (signatures of the trusted
    /// validators), instead of taking the node's word for them.
    pub fn with_light_client(mut self, light: LightClient) -> ChainClient {
        self.light = Some(Arc::new(tokio::sync::Mutex::new(light)));
        self
    }

    /// Whether proven queries check header signatures.
    pub fn verifies_headers(&self) -> bool {
        self.light.is_some()
    }

    /// The node's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The raw tendermint-rpc client, for calls not wrapped here.
    pub fn rpc(&self) -> &HttpClient {
        &self.http
    }

    /// `/status`.
    pub async fn status(&self) -> Result<tendermint_rpc::endpoint::status::Response> {
        self.http
            .status()
            .await
            .with_context(|| format!("cannot reach node at {}", self.url))
    }

    /// Chain id reported by the node.
    pub async fn chain_id(&self) -> Result<String> {
        Ok(self.status().await?.node_info.network.to_string())
    }

    /// Latest block height.
    pub async fn latest_height(&self) -> Result<u64> {
        Ok(self.status().await?.sync_info.latest_block_height.value())
    }

    /// Waits until the chain reaches `height`.
    pub async fn wait_for_height(&self, height: u64, timeout: Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Ok(h) = self.latest_height().await {
                if h >= height {
                    return Ok(());
                }
            }
            if tokio::time::Instant::now() >= deadline {
                bail!(
                    "node {} did not reach height {height} within {timeout:?}",
                    self.url
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// An app query at `height` (0 = latest); returns the value bytes and the height served.
    pub async fn query(&self, path: &str, height: u64) -> Result<(Vec<u8>, u64)> {
        let h = if height == 0 {
            None
        } else {
            Some(tendermint::block::Height::try_from(height)?)
        };
        let res = self
            .http
            .abci_query(Some(path.to_string()), Vec::<u8>::new(), h, false)
            .await?;
        abci_code_ok(&res.code, &res.log, &format!("query {path}"))?;
        Ok((res.value, res.height.value()))
    }

    /// A state key's value with its Merkle proof checked against the app hash of the header
    /// that commits to it.
    pub async fn query_verified(&self, key: &str) -> Result<VerifiedValue> {
        let path = paths::store(key);
        let res = self
            .http
            .abci_query(Some(path.clone()), Vec::<u8>::new(), None, true)
            .await?;
        abci_code_ok(&res.code, &res.log, &format!("query {path}"))?;
        let height = res.height.value();
        let ops = res
            .proof
            .ok_or_else(|| anyhow!("node returned no proof for {key}"))?;
        let op = ops
            .ops
            .iter()
            .find(|op| op.field_type == PROOF_OP_TYPE)
            .ok_or_else(|| anyhow!("node returned no {PROOF_OP_TYPE} proof for {key}"))?;
        // The state after block h is committed to by the header of block h+1.
        self.wait_for_height(height + 1, Duration::from_secs(30))
            .await?;
        let signed_header = match &self.light {
            Some(light) => light.lock().await.verify(self, height + 1).await?,
            None => {
                self.http
                    .commit(tendermint::block::Height::try_from(height + 1)?)
                    .await?
                    .signed_header
            }
        };
        let app_hash: [u8; 32] = signed_header
            .header
            .app_hash
            .as_bytes()
            .try_into()
            .map_err(|_| anyhow!("header app hash is not 32 bytes"))?;
        let value = if res.value.is_empty() {
            None
        } else {
            Some(res.value)
        };
        verify_proof(app_hash, key, value.as_deref(), &op.data)?;
        Ok(VerifiedValue {
            value,
            height,
            app_hash,
        })
    }

    /// A borsh value at the latest height, proven.
    pub async fn get_verified<T: BorshDeserialize>(&self, key: &str) -> Result<Option<T>> {
        match self.query_verified(key).await?.value {
            Some(bytes) => Ok(Some(borsh::from_slice(&bytes)?)),
            None => Ok(None),
        }
    }

    /// A borsh value at the latest height, unproven (one round trip).
    pub async fn get<T: BorshDeserialize>(&self, key: &str) -> Result<Option<T>> {
        let (bytes, _) = self.query(&paths::store(key), 0).await?;
        if bytes.is_empty() {
            Ok(None)
        } else {
            Ok(Some(borsh::from_slice(&bytes)?))
        }
    }

    /// Every latest entry under a state-key prefix, as an in-memory state the modules' typed
    /// read traits work on (e.g. `StakingRead::validators`).
    pub async fn snapshot(&self, prefix: &str) -> Result<gpuchain_types::MemState> {
        let (bytes, _) = self.query(&paths::prefix(prefix), 0).await?;
        let entries: Vec<(String, Vec<u8>)> = borsh::from_slice(&bytes)?;
        let mut state = gpuchain_types::MemState::new();
        state.apply(entries.into_iter().map(|(k, v)| (k, Some(v))).collect());
        Ok(state)
    }

    /// Balance of `address` in ugpu.
    pub async fn balance(&self, address: &Address) -> Result<Amount> {
        Ok(self
            .get::<gpuchain_bank::Account>(&gpuchain_bank::state_key::account(address))
            .await?
            .unwrap_or_default()
            .balance)
    }

    /// The next nonce `address` must use.
    pub async fn nonce(&self, address: &Address) -> Result<u64> {
        let (bytes, _) = self.query(&paths::nonce(address), 0).await?;
        Ok(borsh::from_slice(&bytes)?)
    }

    /// The chain's transaction parameters.
    pub async fn tx_params(&self) -> Result<TxParams> {
        let (bytes, _) = self.query(paths::TX_PARAMS, 0).await?;
        Ok(borsh::from_slice(&bytes)?)
    }

    /// Broadcasts and waits for the block that includes it.
    pub async fn broadcast(&self, tx: &Tx, timeout: Duration) -> Result<TxOutcome> {
        let res = self.http.broadcast_tx_sync(tx.encode()).await?;
        let hash = res.hash.to_string();
        if res.code.is_err() {
            return Ok(TxOutcome {
                hash,
                height: 0,
                code: res.code.value(),
                codespace: res.codespace,
                log: res.log,
                gas_used: 0,
                events: Vec::new(),
            });
        }
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Ok(Some(outcome)) = self.tx_outcome(&hash).await {
                return Ok(outcome);
            }
            if tokio::time::Instant::now() >= deadline {
                bail!("transaction {hash} was not included within {timeout:?}");
            }
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
    }

    /// How the transaction with upper- or lower-case hex `hash` ended in a block, or `None`
    /// when no block holds it (not yet included, refused by CheckTx, or never sent).
    pub async fn tx_outcome(&self, hash: &str) -> Result<Option<TxOutcome>> {
        let parsed: tendermint::Hash = hash
            .to_uppercase()
            .parse()
            .map_err(|_| anyhow!("{hash:?} is not a transaction hash (64 hex digits)"))?;
        let found = match self.http.tx(parsed, false).await {
            Ok(found) => found,
            // CometBFT answers an unknown hash with an internal error whose text says so.
            Err(e) if e.to_string().contains("not found") => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let r = found.tx_result;
        Ok(Some(TxOutcome {
            hash: found.hash.to_string(),
            height: found.height.value(),
            code: r.code.value(),
            codespace: r.codespace,
            log: r.log,
            gas_used: r.gas_used,
            events: r
                .events
                .into_iter()
                .map(|e| {
                    let attrs = e
                        .attributes
                        .iter()
                        .map(|a| {
                            (
                                a.key_str().unwrap_or_default().to_string(),
                                a.value_str().unwrap_or_default().to_string(),
                            )
                        })
                        .collect();
                    (e.kind, attrs)
                })
                .collect(),
        }))
    }

    /// Signs `msgs` with `key` (fetching nonce, chain id and gas price) and broadcasts.
    pub async fn submit(&self, key: &SigningKey, msgs: Vec<Msg>, memo: &str) -> Result<TxOutcome> {
        let signer = Address::from_public_key(&key.verifying_key().to_bytes());
        let (chain_id, nonce, params) =
            tokio::try_join!(self.chain_id(), self.nonce(&signer), self.tx_params())?;
        let tx = build_signed_tx(key, &chain_id, nonce, &params, msgs, memo);
        self.broadcast(&tx, Duration::from_secs(60)).await
    }
}
