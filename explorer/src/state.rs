//! Current state, read from the node: every module's entries under its prefix (the same
//! prefix queries the CLI makes) plus the supply and the module accounts' balances, held as
//! one snapshot per height. A page reads the snapshot of the newest height the explorer has
//! ingested; the first page after a new block fetches it once, the others share it.

use std::sync::Arc;

use anyhow::Result;
use gpuchain_client::{paths, ChainClient};
use gpuchain_types::{Address, Amount, MemState};
use serde::Serialize;
use tokio::sync::Mutex;

/// The module accounts the pages show, by name.
pub const POOLS: [&str; 11] = [
    "fee_pool",
    "escrow",
    "serving_escrow",
    "verification_pool",
    "verify_appeals",
    "verify_bonded",
    "verify_unbonding",
    "bonded_pool",
    "unbonding_pool",
    "rewards_pool",
    "community_pool",
];

/// The prefixes read (every module but the bank, whose accounts are read one by one).
const PREFIXES: [&str; 7] = [
    "staking/",
    "slashing/",
    "reputation/",
    "auction/",
    "verify/",
    "serving/",
    "upgrade/",
];

/// One height's state.
pub struct Snapshot {
    /// The height the node answered at.
    pub height: u64,
    /// Module entries; the modules' typed read traits work on it.
    pub state: MemState,
    /// Total supply, ugpu.
    pub supply: Amount,
    /// Module accounts' balances, in [`POOLS`] order.
    pub pools: Vec<Pool>,
}

/// A module account and its balance.
#[derive(Clone, Debug, Serialize)]
pub struct Pool {
    /// Module name, e.g. `verification_pool`.
    pub name: &'static str,
    /// Its address.
    pub address: Address,
    /// Balance, ugpu.
    pub balance: Amount,
}

/// The newest snapshot, fetched again when the chain moved past it.
pub struct StateCache {
    client: ChainClient,
    current: Mutex<Option<Arc<Snapshot>>>,
}

impl StateCache {
    /// A cache reading through `client`.
    pub fn new(client: ChainClient) -> StateCache {
        StateCache {
            client,
            current: Mutex::new(None),
        }
    }

    /// State at least as new as `height` (the explorer's head); one fetch at a time, shared.
    pub async fn at_least(&self, height: u64) -> Result<Arc<Snapshot>> {
        let mut current = self.current.lock().await;
        if let Some(snapshot) = current.as_ref() {
            if snapshot.height >= height {
                return Ok(snapshot.clone());
            }
        }
        let snapshot = Arc::new(fetch(&self.client).await?);
        *current = Some(snapshot.clone());
        Ok(snapshot)
    }
}

async fn fetch(client: &ChainClient) -> Result<Snapshot> {
    let mut state = MemState::new();
    let mut height = u64::MAX;
    for prefix in PREFIXES {
        let (bytes, at) = client.query(&paths::prefix(prefix), 0).await?;
        height = height.min(at);
        let entries: Vec<(String, Vec<u8>)> = borsh::from_slice(&bytes)?;
        state.apply(entries.into_iter().map(|(k, v)| (k, Some(v))).collect());
    }
    let supply = client
        .get::<Amount>(gpuchain_bank::state_key::supply())
        .await?
        .unwrap_or_default();
    let mut pools = Vec::with_capacity(POOLS.len());
    for name in POOLS {
        let address = Address::module(name);
        pools.push(Pool {
            name,
            address,
            balance: client.balance(&address).await?,
        });
    }
    Ok(Snapshot {
        height: if height == u64::MAX { 0 } else { height },
        state,
        supply,
        pools,
    })
}
