//! Current state, read from the node: each module's entries under its prefix (the same prefix
//! queries the CLI makes), and the supply with the module accounts' balances, cached per
//! module. A page asks for the modules it shows and never waits for a fetch a visitor before
//! it already paid: after each block the refresher (`refresh`) fetches again the modules pages
//! used in the last minute, and only then is the block announced to pages (`/live`), so a page
//! renders state at least as new as the height it shows. A module no page used lately is
//! fetched when a page next needs it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use gpuchain_client::{paths, ChainClient};
use gpuchain_types::{Address, Amount, MemState, StateRead};
use serde::Serialize;

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

/// What a page may read: a module's entries, or the bank's supply and pools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Module {
    /// `staking/`: validators and providers.
    Staking,
    /// `slashing/`: signing records and slash records.
    Slashing,
    /// `reputation/`.
    Reputation,
    /// `auction/`: orders, bids, leases.
    Auction,
    /// `verify/`: verifiers, cases, challenges.
    Verify,
    /// `serving/`: serving orders, leases, claims.
    Serving,
    /// The supply and the module accounts' balances.
    Bank,
}

impl Module {
    /// The state-key prefix it covers (the bank's entries are read one by one).
    pub fn prefix(self) -> &'static str {
        match self {
            Module::Staking => "staking/",
            Module::Slashing => "slashing/",
            Module::Reputation => "reputation/",
            Module::Auction => "auction/",
            Module::Verify => "verify/",
            Module::Serving => "serving/",
            Module::Bank => "bank/",
        }
    }
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

/// One module's state at one height.
pub struct Part {
    /// The height the node answered at.
    pub height: u64,
    /// Its entries.
    pub state: MemState,
    /// For [`Module::Bank`]: the supply and the pools.
    pub bank: Option<(Amount, Vec<Pool>)>,
}

/// What a page reads: the parts it asked for, one state the modules' typed views work on.
pub struct Snapshot {
    /// The oldest height among the parts.
    pub height: u64,
    /// The state of the modules asked for (reads outside them find nothing).
    pub state: View,
    /// Total supply, ugpu (0 unless [`Module::Bank`] was asked for).
    pub supply: Amount,
    /// Module accounts (empty unless [`Module::Bank`] was asked for).
    pub pools: Vec<Pool>,
}

/// The parts of a snapshot as one [`StateRead`]: a key goes to the part whose prefix it has.
pub struct View {
    parts: Vec<(&'static str, Arc<Part>)>,
}

impl View {
    fn part(&self, key: &str) -> Option<&MemState> {
        self.parts
            .iter()
            .find(|(prefix, _)| key.starts_with(prefix))
            .map(|(_, p)| &p.state)
    }
}

impl StateRead for View {
    fn get_raw(&self, key: &str) -> Option<Vec<u8>> {
        self.part(key)?.get_raw(key)
    }

    fn prefix_raw(&self, prefix: &str) -> Vec<(String, Vec<u8>)> {
        self.part(prefix)
            .map(|p| p.prefix_raw(prefix))
            .unwrap_or_default()
    }
}

struct Entry {
    part: Arc<Part>,
    used: Instant,
}

/// How long a module stays refreshed after each block once a page used it.
const KEEP_FRESH: Duration = Duration::from_secs(60);

/// The per-module cache.
pub struct StateCache {
    client: ChainClient,
    entries: Mutex<BTreeMap<Module, Entry>>,
    /// One fetch of a module at a time: a second asker waits and takes the first's answer.
    fetching: tokio::sync::Mutex<()>,
}

impl StateCache {
    /// A cache reading through `client`.
    pub fn new(client: ChainClient) -> StateCache {
        StateCache {
            client,
            entries: Mutex::new(BTreeMap::new()),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    fn cached(&self, module: Module, at_least: u64, touch: bool) -> Option<Arc<Part>> {
        let mut entries = self.entries.lock().ok()?;
        let entry = entries.get_mut(&module)?;
        if entry.part.height < at_least {
            return None;
        }
        if touch {
            entry.used = Instant::now();
        }
        Some(entry.part.clone())
    }

    fn store(&self, module: Module, part: Arc<Part>, touch: bool) {
        if let Ok(mut entries) = self.entries.lock() {
            let used = match entries.get(&module) {
                Some(e) if !touch => e.used,
                _ => Instant::now(),
            };
            entries.insert(module, Entry { part, used });
        }
    }

    /// The modules `wanted`, each at least as new as `head`; cached parts are shared, the
    /// others fetched now.
    pub async fn snapshot(&self, head: u64, wanted: &[Module]) -> Result<Snapshot> {
        let mut parts = Vec::with_capacity(wanted.len());
        for &module in wanted {
            let part = match self.cached(module, head, true) {
                Some(part) => part,
                None => {
                    let _one = self.fetching.lock().await;
                    match self.cached(module, head, true) {
                        Some(part) => part,
                        None => {
                            let part = Arc::new(fetch(&self.client, module).await?);
                            self.store(module, part.clone(), true);
                            part
                        }
                    }
                }
            };
            parts.push((module.prefix(), part));
        }
        let height = parts.iter().map(|(_, p)| p.height).min().unwrap_or(head);
        let (supply, pools) = parts
            .iter()
            .find_map(|(_, p)| p.bank.clone())
            .unwrap_or_default();
        Ok(Snapshot {
            height,
            state: View { parts },
            supply,
            pools,
        })
    }

    /// Fetches again, at the node's latest height, every module a page used in the last
    /// minute and older than `height`. Called after each block, before pages hear of it.
    pub async fn refresh(&self, height: u64) -> Result<()> {
        let due: Vec<Module> = {
            let entries = self
                .entries
                .lock()
                .map_err(|_| anyhow!("state cache poisoned"))?;
            entries
                .iter()
                .filter(|(_, e)| e.part.height < height && e.used.elapsed() < KEEP_FRESH)
                .map(|(m, _)| *m)
                .collect()
        };
        for module in due {
            let _one = self.fetching.lock().await;
            let part = Arc::new(fetch(&self.client, module).await?);
            self.store(module, part, false);
        }
        Ok(())
    }
}

async fn fetch(client: &ChainClient, module: Module) -> Result<Part> {
    let started = Instant::now();
    if module == Module::Bank {
        let height = client.latest_height().await?;
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
        return Ok(Part {
            height,
            state: MemState::new(),
            bank: Some((supply, pools)),
        });
    }
    let (bytes, height) = client.query(&paths::prefix(module.prefix()), 0).await?;
    let entries: Vec<(String, Vec<u8>)> = borsh::from_slice(&bytes)?;
    let count = entries.len();
    let mut state = MemState::new();
    state.apply(entries.into_iter().map(|(k, v)| (k, Some(v))).collect());
    tracing::debug!(
        ?module,
        height,
        entries = count,
        bytes = bytes.len(),
        ms = started.elapsed().as_millis() as u64,
        "state fetched"
    );
    Ok(Part {
        height,
        state,
        bank: None,
    })
}
