//! What the generators see: committed state, the simulation's own memory of its actors, and
//! helpers that sign real transactions with the right nonce.

use std::cell::OnceCell;
use std::collections::{BTreeMap, BTreeSet};

use gpuchain_auction::{AuctionRead, Lease, Order};

use gpuchain_slashing::Evidence;
use gpuchain_staking::{Provider, StakingRead};
use gpuchain_tx::build_signed_tx;
use gpuchain_tx::{Msg, Tx, TxParams};
use gpuchain_types::{Address, StateRead};

use crate::actors::{Actor, Profile, CHAIN_ID};
use crate::Rng;

/// Most recent included transactions kept for replay attempts.
const REPLAY_MEMORY: usize = 64;

/// The simulation's memory across blocks.
pub struct World {
    /// Everyone.
    pub actors: Vec<Actor>,
    /// Account → index in `actors`.
    pub index: BTreeMap<Address, usize>,
    /// Validators (by actor index) that do not sign blocks.
    pub offline: BTreeSet<usize>,
    /// Recently included transactions, for replays.
    pub old_txs: Vec<Vec<u8>>,
    /// Transaction parameters (from genesis).
    pub params: TxParams,
    /// Ringers planted and not yet revealed or expired.
    pub ringers: Vec<super::ringer::Ringer>,
}

impl World {
    /// A world over `actors`.
    pub fn new(actors: Vec<Actor>, params: TxParams) -> World {
        let index = actors
            .iter()
            .enumerate()
            .map(|(i, a)| (a.address, i))
            .collect();
        World {
            actors,
            index,
            offline: BTreeSet::new(),
            old_txs: Vec::new(),
            params,
            ringers: Vec::new(),
        }
    }

    /// Remembers included transactions for later replays.
    pub fn remember(&mut self, txs: &[Vec<u8>]) {
        self.old_txs.extend(txs.iter().cloned());
        let excess = self.old_txs.len().saturating_sub(REPLAY_MEMORY);
        self.old_txs.drain(..excess);
    }
}

/// One block's generation context.
pub struct Gen<'a> {
    /// Committed state.
    pub state: &'a dyn StateRead,
    /// Height of the block being built.
    pub height: u64,
    /// The run's randomness.
    pub rng: &'a mut Rng,
    /// Memory across blocks.
    pub world: &'a mut World,
    /// Whether faulty behaviour and new orders are on (safety phase).
    pub faults_on: bool,
    /// Next nonce per signer within this block.
    pub nonces: BTreeMap<Address, u64>,
    /// Misbehaviour evidence for this block.
    pub evidence: Vec<Evidence>,
    /// Committed orders, read once per block.
    pub orders: OnceCell<Vec<Order>>,
    /// Committed leases, read once per block.
    pub leases: OnceCell<Vec<Lease>>,
}

impl Gen<'_> {
    /// Every committed order (read once per block: state does not change while generating).
    pub fn orders(&self) -> &[Order] {
        self.orders.get_or_init(|| self.state.orders())
    }

    /// Every committed lease.
    pub fn leases(&self) -> &[Lease] {
        self.leases.get_or_init(|| self.state.leases())
    }

    /// The actor's account.
    pub fn addr(&self, who: usize) -> Address {
        self.world
            .actors
            .get(who)
            .map(|a| a.address)
            .unwrap_or(Address([0; 20]))
    }

    /// How `who` behaves now: everyone is honest once faults stop.
    pub fn profile(&self, who: usize) -> Profile {
        match self.world.actors.get(who) {
            Some(a) if self.faults_on => a.profile,
            _ => Profile::Honest,
        }
    }

    /// The next nonce of `who` in this block.
    pub fn nonce(&self, who: usize) -> u64 {
        let addr = self.addr(who);
        self.nonces
            .get(&addr)
            .copied()
            .unwrap_or_else(|| gpuchain_bank::BankRead::nonce(self.state, &addr))
    }

    /// A correctly signed transaction from `who` that uses its next nonce.
    pub fn tx(&mut self, who: usize, msgs: Vec<Msg>) -> Vec<u8> {
        let tx = self.unsent_tx(who, msgs);
        self.nonces
            .insert(self.addr(who), tx.body.nonce.saturating_add(1));
        tx.encode()
    }

    /// A signed transaction with `who`'s next nonce that is not expected to use it up.
    pub fn unsent_tx(&self, who: usize, msgs: Vec<Msg>) -> Tx {
        let nonce = self.nonce(who);
        match self.world.actors.get(who) {
            Some(a) => build_signed_tx(&a.key, CHAIN_ID, nonce, &self.world.params, msgs, ""),
            None => build_signed_tx(
                &ed25519_dalek::SigningKey::from_bytes(&[0; 32]),
                CHAIN_ID,
                nonce,
                &self.world.params,
                msgs,
                "",
            ),
        }
    }

    /// A random actor index.
    pub fn any_actor(&mut self) -> usize {
        let n = self.world.actors.len() as u64;
        usize::try_from(self.rng.below(n)).unwrap_or(0)
    }

    /// A random actor among those matching `pred`.
    pub fn actor_where(&mut self, pred: impl Fn(&Gen<'_>, usize) -> bool) -> Option<usize> {
        let matching: Vec<usize> = (0..self.world.actors.len())
            .filter(|&i| pred(self, i))
            .collect();
        self.rng.pick(&matching).copied()
    }

    /// A registered provider that is one of our actors, with its record.
    pub fn provider_actor(&mut self) -> Option<(usize, Provider)> {
        let providers: Vec<(usize, Provider)> = self
            .state
            .providers()
            .into_iter()
            .filter_map(|p| self.world.index.get(&p.operator).map(|&i| (i, p)))
            .collect();
        self.rng.pick(&providers).cloned()
    }
}
