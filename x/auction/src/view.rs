use gpuchain_types::{Address, Amount, StateRead, StateReadExt, StateWrite, StateWriteExt};

use gpuchain_staking::StakingRead;

use crate::{state_key, AuctionError, AuctionParams, Bid, Lease, Order, OrderState};

/// Typed auction reads (the module's queries).
pub trait AuctionRead: StateRead {
    /// Module parameters.
    fn auction_params(&self) -> AuctionParams {
        self.get(state_key::params()).unwrap_or_default()
    }

    /// One order.
    fn order(&self, id: u64) -> Option<Order> {
        self.get(&state_key::order(id))
    }

    /// Every order, by id.
    fn orders(&self) -> Vec<Order> {
        self.prefix(state_key::orders_prefix())
            .into_iter()
            .map(|(_, o)| o)
            .collect()
    }

    /// A client's orders, by id.
    fn orders_of_client(&self, client: &Address) -> Vec<Order> {
        ids(self.prefix::<()>(&state_key::orders_by_client_prefix(client)))
            .filter_map(|id| self.order(id))
            .collect()
    }

    /// Orders still taking bids at `height` whose requirements `provider`'s hardware meets
    /// (empty when it is not an eligible provider), by id. For the provider CLI and agent.
    fn open_orders_for(&self, provider: &Address, height: u64) -> Vec<Order> {
        let Some(p) = self
            .provider(provider)
            .filter(|_| self.is_eligible_provider(provider, height))
        else {
            return Vec::new();
        };
        self.orders()
            .into_iter()
            .filter(|o| o.state == OrderState::Open && height <= o.bid_end_height)
            .filter(|o| o.client != *provider && o.requirements.matches(&p.attrs))
            .collect()
    }

    /// One provider's bid on an order.
    fn bid(&self, order_id: u64, provider: &Address) -> Option<Bid> {
        self.get(&state_key::bid(order_id, provider))
    }

    /// How many bids an order has.
    fn bid_count(&self, order_id: u64) -> u32 {
        self.get(&state_key::bid_count(order_id)).unwrap_or(0)
    }

    /// An order's bids, in provider-address order.
    fn bids(&self, order_id: u64) -> Vec<Bid> {
        self.prefix(&state_key::bids_prefix(order_id))
            .into_iter()
            .map(|(_, b)| b)
            .collect()
    }

    /// One lease.
    fn lease(&self, id: u64) -> Option<Lease> {
        self.get(&state_key::lease(id))
    }

    /// Every lease, by id.
    fn leases(&self) -> Vec<Lease> {
        self.prefix(state_key::leases_prefix())
            .into_iter()
            .map(|(_, l)| l)
            .collect()
    }

    /// An order's leases, by id.
    fn leases_of_order(&self, order_id: u64) -> Vec<Lease> {
        ids(self.prefix::<()>(&state_key::leases_by_order_prefix(order_id)))
            .filter_map(|id| self.lease(id))
            .collect()
    }

    /// A provider's leases, by id.
    fn leases_of_provider(&self, provider: &Address) -> Vec<Lease> {
        ids(self.prefix::<()>(&state_key::leases_by_provider_prefix(provider)))
            .filter_map(|id| self.lease(id))
            .collect()
    }

    /// Leases waiting for a verdict (`AuditPending` or `Disputed`), by id.
    fn verdict_pending_leases(&self) -> Vec<Lease> {
        ids(self.prefix::<()>(state_key::verdict_pending_prefix()))
            .filter_map(|id| self.lease(id))
            .collect()
    }

    /// What the provider of a `Comparing` lease stated, if it did.
    fn comparison(&self, lease_id: u64) -> Option<bool> {
        self.get(&state_key::comparison(lease_id))
    }

    /// A validator's accrued, unwithdrawn rewards.
    fn reward(&self, validator: &Address) -> Amount {
        self.get(&state_key::reward(validator)).unwrap_or(0)
    }

    /// Every accrued reward, by validator key.
    fn rewards(&self) -> Vec<(String, Amount)> {
        self.prefix(state_key::rewards_prefix())
    }

    /// Sum of every order's open obligation: what the escrow account must hold.
    fn escrow_obligations(&self) -> Option<Amount> {
        self.orders()
            .iter()
            .try_fold(0u128, |acc, o| acc.checked_add(o.escrowed))
    }
}

impl<S: StateRead + ?Sized> AuctionRead for S {}

fn ids<T>(entries: Vec<(String, T)>) -> impl Iterator<Item = u64> {
    entries
        .into_iter()
        .filter_map(|(k, _)| k.rsplit('/').next()?.parse().ok())
}

/// Typed auction writes.
pub trait AuctionWrite: StateWrite {
    /// Stores the module parameters.
    fn put_auction_params(&mut self, params: &AuctionParams) {
        self.put(state_key::params().to_string(), params);
    }

    /// Takes the next id from the counter at `key`.
    fn take_id(&mut self, key: &str) -> Result<u64, AuctionError> {
        let id: u64 = self.get(key).unwrap_or(0);
        let next = id.checked_add(1).ok_or(AuctionError::Overflow)?;
        self.put(key.to_string(), &next);
        Ok(id)
    }

    /// Stores an order and its client index.
    fn put_order(&mut self, order: &Order) {
        self.put(state_key::order(order.id), order);
        self.put(state_key::order_by_client(&order.client, order.id), &());
    }

    /// Stores a new bid and counts it.
    fn add_bid(&mut self, bid: &Bid) -> Result<(), AuctionError> {
        let count = self
            .bid_count(bid.order_id)
            .checked_add(1)
            .ok_or(AuctionError::Overflow)?;
        self.put(state_key::bid_count(bid.order_id), &count);
        self.put(state_key::bid(bid.order_id, &bid.provider), bid);
        Ok(())
    }

    /// Stores a lease and its indexes.
    fn put_lease(&mut self, lease: &Lease) {
        self.put(state_key::lease(lease.id), lease);
        self.put(state_key::lease_by_order(lease.order_id, lease.id), &());
        self.put(state_key::lease_by_provider(&lease.provider, lease.id), &());
    }

    /// Records a `Comparing` lease's comparison; `None` deletes it.
    fn put_comparison(&mut self, lease_id: u64, consistent: Option<bool>) {
        let key = state_key::comparison(lease_id);
        match consistent {
            Some(c) => self.put(key, &c),
            None => self.delete(key),
        }
    }

    /// Adds an entry to a height-keyed queue (a `state_key::*_queue` or `lease_timer` key).
    fn enqueue(&mut self, key: String) {
        self.put(key, &());
    }

    /// Sets a validator's accrued rewards (0 deletes).
    fn put_reward(&mut self, validator: &Address, amount: Amount) {
        let key = state_key::reward(validator);
        if amount == 0 {
            self.delete(key);
        } else {
            self.put(key, &amount);
        }
    }
}

impl<S: StateWrite + ?Sized> AuctionWrite for S {}
