//! The explorer's read model: what it learned from every block it read, in memory. It is
//! rebuilt from the chain on every start and is never the source of truth: current objects
//! (providers, orders, leases, cases) are read from state (`state.rs`); the model keeps
//! what state forgets — when each bid arrived, each clearing price, each object's event
//! history, each account's transactions — bounded per object so it does not grow with the
//! chain's length faster than with its objects.

use std::collections::{BTreeMap, VecDeque};

use gpuchain_auction::{
    AuctionMsg, BidPlacedEvent, ClassRequirement, LeaseCreatedEvent, LeasePaidEvent,
    LeaseStateEvent, OrderClearedEvent, OrderPostedEvent,
};
use gpuchain_client::follow::ChainEvent;
use gpuchain_serving::{ServingBidEvent, ServingClearedEvent, ServingMsg, ServingOrderOpenedEvent};
use gpuchain_tx::Msg;
use gpuchain_types::Address;
use serde::Serialize;

/// Blocks kept for the chain pages (older ones are read from the node when asked for).
pub const RECENT_BLOCKS: usize = 500;
/// Events kept per object (order, lease, account, …), newest last.
pub const EVENTS_PER_OBJECT: usize = 200;
/// Events kept for the activity feed.
pub const RECENT_EVENTS: usize = 300;
/// Transactions kept per account and for the recent list.
pub const TXS_PER_ACCOUNT: usize = 200;
/// Points kept per price series.
pub const POINTS_PER_SERIES: usize = 5_000;

/// One block as the chain pages list it.
#[derive(Clone, Debug, Serialize)]
pub struct BlockRow {
    /// Height.
    pub height: u64,
    /// Header time (RFC 3339), as the proposer stamped it.
    pub time: String,
    /// Unix seconds of `time`, for "seconds ago".
    pub unix: i64,
    /// Block hash (upper-case hex).
    pub hash: String,
    /// Proposer's consensus address (upper-case hex).
    pub proposer: String,
    /// Transactions in the block.
    pub txs: u32,
    /// Transactions that failed.
    pub failed_txs: u32,
    /// Events of successful transactions and of the block itself.
    pub events: u32,
}

/// A transaction as lists show it; the transaction page reads the whole of it from the node.
#[derive(Clone, Debug, Serialize)]
pub struct TxRow {
    /// Upper-case hex sha256 of its bytes, as CometBFT indexes it.
    pub hash: String,
    /// Block.
    pub height: u64,
    /// Signer (none when the bytes did not decode as a gpuchain transaction).
    pub signer: Option<Address>,
    /// Message names, e.g. `auction.bid`.
    pub msgs: Vec<String>,
    /// 0 on success.
    pub code: u32,
}

/// One event, where it happened.
#[derive(Clone, Debug, Serialize)]
pub struct EventRow {
    /// Block.
    pub height: u64,
    /// The transaction that emitted it; none for end-block work (clearing, payouts, …).
    pub tx: Option<String>,
    /// `<module>.<what>`.
    pub kind: String,
    /// Attributes in order.
    pub attrs: Vec<(String, String)>,
}

impl EventRow {
    /// The first value of attribute `key`.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// What the model remembers of an order beyond its state: what kind of work it was, so the
/// price it cleared at lands in the right series even after the order is retired.
#[derive(Clone, Debug, Serialize)]
pub struct OrderMeta {
    /// Job kind (`logits`, `embeddings`, `tokens`, `training`) or the serving kind.
    pub kind: String,
    /// Machine class asked for (`any`, `gpu`, `cpu`).
    pub class: String,
    /// Height it was posted at.
    pub posted_height: u64,
    /// The posting transaction.
    pub posted_tx: Option<String>,
}

/// One clearing: an order's uniform price.
#[derive(Clone, Debug, Serialize)]
pub struct Clearing {
    /// `auction` (batch jobs) or `serving` (leases).
    pub market: &'static str,
    /// Order.
    pub order_id: u64,
    /// Height it cleared at.
    pub height: u64,
    /// Clearing price in ugpu: per replica (batch) or per million tokens / thousand inputs
    /// (serving).
    pub price: u128,
    /// Leases created.
    pub winners: u32,
    /// Bids it had (batch orders).
    pub bids: Option<u32>,
    /// The series it belongs to, e.g. `logits · cpu`.
    pub series: String,
}

/// One point of a price series.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct PricePoint {
    /// Height.
    pub height: u64,
    /// Clearing price, ugpu.
    pub price: u128,
}

/// A provider's bid as the providers table shows its asking price.
#[derive(Clone, Debug, Serialize)]
pub struct AskingPrice {
    /// `auction` or `serving`.
    pub market: &'static str,
    /// Order bid on.
    pub order_id: u64,
    /// Price, ugpu (per replica, or per million tokens / thousand inputs).
    pub price: u128,
    /// Height of the bid.
    pub height: u64,
}

/// What a provider did on chain, counted from events.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ProviderActivity {
    /// Bids placed (both markets).
    pub bids: u64,
    /// Leases won (both markets).
    pub leases: u64,
    /// Batch leases paid.
    pub paid: u64,
    /// Batch leases proven wrong.
    pub faulted: u64,
    /// Batch leases missed (no commit or reveal in time).
    pub missed: u64,
    /// ugpu earned from batch leases.
    pub earned: u128,
    /// The latest bid.
    pub last_bid: Option<AskingPrice>,
    /// Height of the latest transaction it signed.
    pub last_seen: Option<u64>,
}

impl ProviderActivity {
    /// Share of its closed batch leases it delivered, in ppm; none before any closed.
    pub fn uptime_ppm(&self) -> Option<u64> {
        let closed = self.paid + self.faulted + self.missed;
        (closed > 0).then(|| self.paid * 1_000_000 / closed)
    }
}

/// A transaction as ingested: its hash, decoded messages and result.
#[derive(Clone, Debug)]
pub struct IngestTx {
    /// Upper-case hex sha256.
    pub hash: String,
    /// Signer and messages, when the bytes decoded.
    pub decoded: Option<(Address, Vec<Msg>)>,
    /// 0 on success.
    pub code: u32,
    /// Its events (a failed transaction keeps only its fee events).
    pub events: Vec<ChainEvent>,
}

/// One block as ingested.
#[derive(Clone, Debug)]
pub struct IngestBlock {
    /// Header fields the lists show.
    pub row: BlockRow,
    /// Transactions in block order.
    pub txs: Vec<IngestTx>,
    /// FinalizeBlock events.
    pub block_events: Vec<ChainEvent>,
}

/// The read model.
#[derive(Debug, Default)]
pub struct ReadModel {
    /// Chain id of the node followed.
    pub chain_id: String,
    /// Lowest height the node keeps (read at start).
    pub earliest: u64,
    /// Blocks read, newest last (the last [`RECENT_BLOCKS`]).
    pub blocks: VecDeque<BlockRow>,
    /// Recent transactions, newest last.
    pub recent_txs: VecDeque<TxRow>,
    /// Recent events, newest last.
    pub recent_events: VecDeque<EventRow>,
    /// Event history per object key (see [`object_keys`]).
    pub objects: BTreeMap<String, VecDeque<EventRow>>,
    /// Transactions per signer.
    pub account_txs: BTreeMap<String, VecDeque<TxRow>>,
    /// Orders' kind and class, batch market (by id).
    pub orders: BTreeMap<u64, OrderMeta>,
    /// Serving orders' model kind (by id).
    pub serving_orders: BTreeMap<u64, OrderMeta>,
    /// Clearings, newest last.
    pub clearings: VecDeque<Clearing>,
    /// Clearing prices per series (`logits · cpu`, `serving chat`, …).
    pub prices: BTreeMap<String, VecDeque<PricePoint>>,
    /// Per-provider activity.
    pub providers: BTreeMap<String, ProviderActivity>,
    /// Transactions seen in all.
    pub tx_count: u64,
}

fn push_capped<T>(queue: &mut VecDeque<T>, item: T, cap: usize) {
    queue.push_back(item);
    while queue.len() > cap {
        queue.pop_front();
    }
}

/// The objects an event belongs to: `auction/order/<id>`, `auction/lease/<id>`,
/// `serving/order/<id>`, `serving/lease/<id>`, `serving/claim/<id>`, and `account/<address>`
/// for every attribute that is an address. Batch-market events come from x/auction, its
/// escrow and verification (`auction.*`, `escrow.*`, `verify.*`); serving events are
/// `serving.*`.
pub fn object_keys(kind: &str, attrs: &[(String, String)]) -> Vec<String> {
    let market = if kind.starts_with("serving.") {
        "serving"
    } else {
        "auction"
    };
    let mut keys = Vec::new();
    for (key, value) in attrs {
        let object = match key.as_str() {
            "order_id" => Some("order"),
            "lease_id" => Some("lease"),
            "claim_id" if market == "serving" => Some("claim"),
            _ => None,
        };
        if let Some(object) = object {
            if value.parse::<u64>().is_ok() {
                keys.push(format!("{market}/{object}/{value}"));
            }
        } else if value.starts_with("gpu1") && value.parse::<Address>().is_ok() {
            keys.push(format!("account/{value}"));
        }
    }
    if is_verification(kind) {
        keys.push(VERIFICATION.to_string());
    }
    keys.sort();
    keys.dedup();
    keys
}

/// Events every transaction emits that say nothing about the market: its `tx` and `message`
/// envelope and the fee it paid into the fee pool (the transaction page still shows them).
pub fn is_bookkeeping(event: &ChainEvent) -> bool {
    match event.kind.as_str() {
        "tx" | "message" => true,
        "bank.transfer" => {
            event.attr("to")
                == Some(
                    gpuchain_bank::module_account::fee_pool()
                        .to_string()
                        .as_str(),
                )
        }
        _ => false,
    }
}

/// The object key of every verification event (verdicts, appeals, ringers, audits, slashes).
pub const VERIFICATION: &str = "verification";

/// Whether an event is verification's: x/verify's, slashes, serving audits and juries.
pub fn is_verification(kind: &str) -> bool {
    (kind.starts_with("verify.")
        && !matches!(
            kind,
            "verify.committed" | "verify.revealed" | "verify.replicas_compared"
        ))
        || kind.starts_with("slashing.slash")
        || matches!(
            kind,
            "serving.audit"
                | "serving.juror"
                | "serving.recused"
                | "serving.models_declared"
                | "serving.claim_settled"
                | "serving.report"
        )
}

fn class_name(class: &ClassRequirement) -> &'static str {
    match class {
        ClassRequirement::Any => "any",
        ClassRequirement::Gpu => "gpu",
        ClassRequirement::Cpu => "cpu",
    }
}

impl ReadModel {
    /// An empty model of `chain_id` whose node keeps blocks from `earliest`.
    pub fn new(chain_id: String, earliest: u64) -> ReadModel {
        ReadModel {
            chain_id,
            earliest,
            ..ReadModel::default()
        }
    }

    /// The latest block read.
    pub fn head(&self) -> Option<&BlockRow> {
        self.blocks.back()
    }

    /// The latest height read (0 before any).
    pub fn height(&self) -> u64 {
        self.head().map_or(0, |b| b.height)
    }

    /// Reads one block into the model. Blocks must come in height order, each once.
    pub fn ingest(&mut self, block: IngestBlock) {
        let height = block.row.height;
        for tx in &block.txs {
            self.ingest_tx(height, tx);
        }
        for event in &block.block_events {
            self.ingest_event(height, None, event);
        }
        push_capped(&mut self.blocks, block.row, RECENT_BLOCKS);
    }

    fn ingest_tx(&mut self, height: u64, tx: &IngestTx) {
        self.tx_count = self.tx_count.saturating_add(1);
        let (signer, msgs) = match &tx.decoded {
            Some((signer, msgs)) => (Some(*signer), msgs.as_slice()),
            None => (None, &[][..]),
        };
        let row = TxRow {
            hash: tx.hash.clone(),
            height,
            signer,
            msgs: msgs.iter().map(|m| m.name().to_string()).collect(),
            code: tx.code,
        };
        if let Some(signer) = signer {
            push_capped(
                self.account_txs.entry(signer.to_string()).or_default(),
                row.clone(),
                TXS_PER_ACCOUNT,
            );
        }
        push_capped(&mut self.recent_txs, row, TXS_PER_ACCOUNT);
        if tx.code == 0 {
            self.remember_orders(height, tx, msgs);
            for event in &tx.events {
                self.ingest_event(height, Some(&tx.hash), event);
            }
        }
        // After the events, so a provider's first bid already counts it as one; a failed
        // transaction still shows it is alive.
        if let Some(activity) = signer.and_then(|s| self.providers.get_mut(&s.to_string())) {
            activity.last_seen = Some(height);
        }
    }

    /// Orders posted by this transaction: their ids come from its events, in message order.
    fn remember_orders(&mut self, height: u64, tx: &IngestTx, msgs: &[Msg]) {
        let mut posted = tx
            .events
            .iter()
            .filter_map(|e| e.decode::<OrderPostedEvent>())
            .map(|e| e.order_id);
        let mut opened = tx
            .events
            .iter()
            .filter_map(|e| e.decode::<ServingOrderOpenedEvent>())
            .map(|e| (e.order_id, e.kind.to_string()));
        for msg in msgs {
            match msg {
                Msg::Auction(AuctionMsg::PostOrder(post)) => {
                    if let Some(id) = posted.next() {
                        self.orders.insert(
                            id,
                            OrderMeta {
                                kind: post.job.kind().name().to_string(),
                                class: class_name(&post.requirements.class).to_string(),
                                posted_height: height,
                                posted_tx: Some(tx.hash.clone()),
                            },
                        );
                    }
                }
                Msg::Serving(ServingMsg::Open(_)) => {
                    if let Some((id, kind)) = opened.next() {
                        self.serving_orders.insert(
                            id,
                            OrderMeta {
                                kind,
                                class: "serving".to_string(),
                                posted_height: height,
                                posted_tx: Some(tx.hash.clone()),
                            },
                        );
                    }
                }
                _ => {}
            }
        }
    }

    fn provider(&mut self, provider: &Address) -> &mut ProviderActivity {
        self.providers.entry(provider.to_string()).or_default()
    }

    fn ingest_event(&mut self, height: u64, tx: Option<&str>, event: &ChainEvent) {
        if is_bookkeeping(event) {
            return;
        }
        let row = EventRow {
            height,
            tx: tx.map(str::to_string),
            kind: event.kind.clone(),
            attrs: event.attrs.clone(),
        };
        self.count_event(height, event);
        for key in object_keys(&event.kind, &event.attrs) {
            push_capped(
                self.objects.entry(key).or_default(),
                row.clone(),
                EVENTS_PER_OBJECT,
            );
        }
        push_capped(&mut self.recent_events, row, RECENT_EVENTS);
    }

    fn count_event(&mut self, height: u64, event: &ChainEvent) {
        if let Some(bid) = event.decode::<BidPlacedEvent>() {
            let p = self.provider(&bid.provider);
            p.bids = p.bids.saturating_add(1);
            p.last_bid = Some(AskingPrice {
                market: "auction",
                order_id: bid.order_id,
                price: bid.price,
                height,
            });
        } else if let Some(bid) = event.decode::<ServingBidEvent>() {
            let p = self.provider(&bid.provider);
            p.bids = p.bids.saturating_add(1);
            p.last_bid = Some(AskingPrice {
                market: "serving",
                order_id: bid.order_id,
                price: bid.price,
                height,
            });
        } else if let Some(lease) = event.decode::<LeaseCreatedEvent>() {
            let p = self.provider(&lease.provider);
            p.leases = p.leases.saturating_add(1);
        } else if let Some(lease) = event.decode::<gpuchain_serving::ServingLeaseEvent>() {
            let p = self.provider(&lease.provider);
            p.leases = p.leases.saturating_add(1);
        } else if let Some(paid) = event.decode::<LeasePaidEvent>() {
            let p = self.provider(&paid.provider);
            p.paid = p.paid.saturating_add(1);
            p.earned = p.earned.saturating_add(paid.amount);
        } else if let Some(state) = event.decode::<LeaseStateEvent>() {
            let p = self.provider(&state.provider);
            match state.state.as_ref() {
                "faulted" => p.faulted = p.faulted.saturating_add(1),
                "missed" => p.missed = p.missed.saturating_add(1),
                _ => {}
            }
        } else if let Some(cleared) = event.decode::<OrderClearedEvent>() {
            let series = match self.orders.get(&cleared.order_id) {
                Some(meta) => format!("{} · {}", meta.kind, meta.class),
                None => "unknown".to_string(),
            };
            self.record_clearing(Clearing {
                market: "auction",
                order_id: cleared.order_id,
                height,
                price: cleared.clearing_price,
                winners: cleared.winners,
                bids: Some(cleared.bids),
                series,
            });
        } else if let Some(cleared) = event.decode::<ServingClearedEvent>() {
            let series = match self.serving_orders.get(&cleared.order_id) {
                Some(meta) => format!("serving {}", meta.kind),
                None => "serving".to_string(),
            };
            self.record_clearing(Clearing {
                market: "serving",
                order_id: cleared.order_id,
                height,
                price: cleared.price,
                winners: cleared.leases,
                bids: None,
                series,
            });
        }
    }

    fn record_clearing(&mut self, clearing: Clearing) {
        push_capped(
            self.prices.entry(clearing.series.clone()).or_default(),
            PricePoint {
                height: clearing.height,
                price: clearing.price,
            },
            POINTS_PER_SERIES,
        );
        push_capped(&mut self.clearings, clearing, RECENT_EVENTS);
    }

    /// The events of an object key, oldest first.
    pub fn history(&self, key: &str) -> Vec<EventRow> {
        self.objects
            .get(key)
            .map(|q| q.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Activity of a provider (zero when it did nothing yet).
    pub fn activity(&self, provider: &str) -> ProviderActivity {
        self.providers.get(provider).cloned().unwrap_or_default()
    }

    /// Approximate bytes held, for the memory figure (strings and rows, not allocator slack).
    pub fn approx_bytes(&self) -> usize {
        let event = |e: &EventRow| {
            64 + e.kind.len()
                + e.tx.as_ref().map_or(0, String::len)
                + e.attrs
                    .iter()
                    .map(|(k, v)| 48 + k.len() + v.len())
                    .sum::<usize>()
        };
        let tx = |t: &TxRow| 120 + t.msgs.iter().map(|m| 24 + m.len()).sum::<usize>();
        self.blocks.len() * 200
            + self.recent_events.iter().map(event).sum::<usize>()
            + self
                .objects
                .iter()
                .map(|(k, q)| k.len() + q.iter().map(event).sum::<usize>())
                .sum::<usize>()
            + self.recent_txs.iter().map(tx).sum::<usize>()
            + self
                .account_txs
                .values()
                .map(|q| q.iter().map(tx).sum::<usize>())
                .sum::<usize>()
            + (self.orders.len() + self.serving_orders.len()) * 160
            + self.clearings.len() * 120
            + self.prices.values().map(|q| q.len() * 24).sum::<usize>()
            + self.providers.len() * 200
    }
}

#[cfg(test)]
mod tests;
