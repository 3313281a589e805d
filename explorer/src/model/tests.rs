use std::borrow::Cow;

use gpuchain_auction::{
    AuctionMsg, BidPlacedEvent, LeaseCreatedEvent, LeasePaidEvent, LeaseStateEvent, MsgPostOrder,
    OrderClearedEvent, OrderPostedEvent, Requirements, TooFewBids,
};
use gpuchain_client::follow::ChainEvent;
use gpuchain_jobspec::{BlobRef, InferenceSpec, JobSpec, ModelArch};
use gpuchain_tx::Msg;
use gpuchain_types::Event;

use super::*;

fn addr(seed: u8) -> Address {
    Address([seed; 20])
}

/// A GPU order for the digits MLP.
fn order_msg(replicas: u32, max: u128) -> MsgPostOrder {
    let blob = |size| BlobRef {
        blake3: [7; 32],
        size,
        urls: vec!["https://data.example.org/blob".into()],
    };
    MsgPostOrder {
        job: JobSpec::Inference(InferenceSpec {
            arch: ModelArch::DigitsMlp,
            weights: blob(40_000),
            tokenizer: None,
            input: blob(1_000),
            batch_size: 64,
            llama: None,
            generation: None,
            tolerance: None,
        }),
        requirements: Requirements {
            class: ClassRequirement::Gpu,
            gpu_model: None,
            min_vram_mib: 40_000,
            min_gpu_count: 1,
            min_cuda_version: 0,
            region: None,
        },
        replicas,
        max_price_per_replica: max,
        bid_window_blocks: 3,
        exec_deadline_blocks: 5,
        on_too_few_bids: TooFewBids::Refund,
    }
}

fn chain_event(event: impl Into<Event>) -> ChainEvent {
    let e: Event = event.into();
    ChainEvent {
        kind: e.kind.to_string(),
        attrs: e
            .attributes
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    }
}

fn block(height: u64, txs: Vec<IngestTx>, block_events: Vec<ChainEvent>) -> IngestBlock {
    IngestBlock {
        row: BlockRow {
            height,
            time: "2026-12-03T00:00:00Z".into(),
            unix: 1_796_256_000 + i64::try_from(height).unwrap(),
            hash: format!("{height:064X}"),
            proposer: "AB".into(),
            txs: u32::try_from(txs.len()).unwrap(),
            failed_txs: 0,
            events: 0,
        },
        txs,
        block_events,
    }
}

fn tx(hash: &str, signer: u8, msgs: Vec<Msg>, code: u32, events: Vec<ChainEvent>) -> IngestTx {
    IngestTx {
        hash: hash.into(),
        decoded: Some((addr(signer), msgs)),
        code,
        events,
    }
}

fn posted(order_id: u64) -> ChainEvent {
    chain_event(OrderPostedEvent {
        order_id,
        client: addr(1),
        replicas: 2,
        max_price_per_replica: 500,
        escrowed: 1_000,
        bid_end_height: 5,
    })
}

fn bid(order_id: u64, provider: u8, price: u128) -> ChainEvent {
    chain_event(BidPlacedEvent {
        order_id,
        provider: addr(provider),
        price,
    })
}

fn lease_state(lease_id: u64, provider: u8, state: &'static str) -> ChainEvent {
    chain_event(LeaseStateEvent {
        lease_id,
        order_id: 1,
        provider: addr(provider),
        client: addr(1),
        state: Cow::Borrowed(state),
    })
}

/// An order posted, bid on twice, cleared, one lease paid and one faulted.
fn market_history() -> ReadModel {
    let mut m = ReadModel::new("test".into(), 1);
    let post = Msg::Auction(AuctionMsg::PostOrder(order_msg(2, 500)));
    m.ingest(block(
        1,
        vec![tx("A1", 1, vec![post], 0, vec![posted(1)])],
        vec![],
    ));
    m.ingest(block(
        2,
        vec![
            tx("B1", 2, vec![], 0, vec![bid(1, 2, 300)]),
            tx("B2", 3, vec![], 0, vec![bid(1, 3, 200)]),
        ],
        vec![],
    ));
    let cleared = chain_event(OrderClearedEvent {
        order_id: 1,
        client: addr(1),
        clearing_price: 300,
        winners: 2,
        bids: 2,
    });
    let leases = (1..=2u64).map(|id| {
        chain_event(LeaseCreatedEvent {
            lease_id: id,
            order_id: 1,
            provider: addr(u8::try_from(id).unwrap() + 1),
            client: addr(1),
            price: 300,
            deadline_height: 10,
        })
    });
    let mut events = vec![cleared];
    events.extend(leases);
    m.ingest(block(5, vec![], events));
    let paid = chain_event(LeasePaidEvent {
        lease_id: 1,
        order_id: 1,
        provider: addr(2),
        client: addr(1),
        amount: 300,
        bonus: 0,
        take: 0,
        verification: 0,
    });
    m.ingest(block(9, vec![], vec![paid, lease_state(2, 3, "faulted")]));
    m
}

#[test]
fn a_clearing_lands_in_the_series_of_its_job_kind_and_class() {
    let m = market_history();
    assert_eq!(m.orders[&1].kind, "logits");
    assert_eq!(m.orders[&1].class, "gpu");
    assert_eq!(m.orders[&1].posted_tx.as_deref(), Some("A1"));
    let series = &m.prices["logits · gpu"];
    assert_eq!(series.len(), 1);
    assert_eq!((series[0].height, series[0].price), (5, 300));
    assert_eq!(m.clearings.back().map(|c| c.bids), Some(Some(2)));
}

#[test]
fn providers_record_their_latest_bid_their_leases_and_what_they_delivered() {
    let m = market_history();
    let honest = m.activity(&addr(2).to_string());
    assert_eq!(honest.bids, 1);
    assert_eq!(honest.last_bid.as_ref().map(|b| b.price), Some(300));
    assert_eq!(honest.leases, 1);
    assert_eq!((honest.paid, honest.earned), (1, 300));
    assert_eq!(honest.uptime_ppm(), Some(1_000_000));
    assert_eq!(honest.last_seen, Some(2), "its bid transaction");
    let cheat = m.activity(&addr(3).to_string());
    assert_eq!(cheat.faulted, 1);
    assert_eq!(cheat.uptime_ppm(), Some(0));
    assert_eq!(m.activity(&addr(9).to_string()).uptime_ppm(), None);
}

#[test]
fn an_orders_history_holds_its_bids_in_the_order_they_arrived_then_its_clearing() {
    let m = market_history();
    let kinds: Vec<(u64, String)> = m
        .history("auction/order/1")
        .into_iter()
        .map(|e| (e.height, e.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            (1, "auction.order_posted"),
            (2, "auction.bid"),
            (2, "auction.bid"),
            (5, "auction.order_cleared"),
            (5, "auction.lease_created"),
            (5, "auction.lease_created"),
            (9, "escrow.paid"),
            (9, "verify.lease_state"),
        ]
        .map(|(h, k)| (h, k.to_string()))
    );
    assert_eq!(m.history("auction/lease/2").len(), 2);
    assert_eq!(m.history("verification").len(), 1, "the faulted lease");
    assert!(m.history("auction/order/2").is_empty());
}

#[test]
fn a_failed_transaction_is_listed_but_its_events_change_nothing() {
    let mut m = ReadModel::new("test".into(), 1);
    m.ingest(block(
        1,
        vec![tx("F1", 4, vec![], 7, vec![bid(3, 4, 10)])],
        vec![],
    ));
    assert_eq!(m.account_txs[&addr(4).to_string()].len(), 1);
    assert_eq!(m.recent_txs.back().map(|t| t.code), Some(7));
    assert!(m.history("auction/order/3").is_empty());
    assert_eq!(m.activity(&addr(4).to_string()).bids, 0);
}

#[test]
fn object_keys_separate_the_two_markets_and_index_every_address() {
    let a = addr(5).to_string();
    let attrs = vec![
        ("order_id".to_string(), "4".to_string()),
        ("lease_id".to_string(), "9".to_string()),
        ("provider".to_string(), a.clone()),
        ("model".to_string(), "gpu1-not-an-address".to_string()),
    ];
    assert_eq!(
        object_keys("auction.lease_created", &attrs),
        [
            "account/".to_string() + &a,
            "auction/lease/9".into(),
            "auction/order/4".into()
        ]
    );
    assert_eq!(
        object_keys("serving.claim", &attrs),
        [
            "account/".to_string() + &a,
            "serving/lease/9".into(),
            "serving/order/4".into()
        ]
    );
    assert!(object_keys("verify.verdict", &[]).contains(&VERIFICATION.to_string()));
    assert!(!object_keys("verify.committed", &[]).contains(&VERIFICATION.to_string()));
}

#[test]
fn history_is_bounded_per_object_and_blocks_to_the_recent_ones() {
    let mut m = ReadModel::new("test".into(), 1);
    for h in 1..=(RECENT_BLOCKS as u64 + 50) {
        m.ingest(block(h, vec![], vec![bid(1, 2, u128::from(h))]));
    }
    assert_eq!(m.blocks.len(), RECENT_BLOCKS);
    assert_eq!(m.height(), RECENT_BLOCKS as u64 + 50);
    let history = m.history("auction/order/1");
    assert_eq!(history.len(), EVENTS_PER_OBJECT);
    assert_eq!(
        history.last().map(|e| e.height),
        Some(m.height()),
        "newest kept"
    );
    assert_eq!(m.recent_events.len(), RECENT_EVENTS);
}

#[test]
fn a_transactions_envelope_and_fee_are_not_market_history() {
    let mut m = ReadModel::new("test".into(), 1);
    let event = |kind: &str, attrs: &[(&str, String)]| ChainEvent {
        kind: kind.into(),
        attrs: attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    };
    let fee_pool = gpuchain_bank::module_account::fee_pool().to_string();
    let signer = addr(4).to_string();
    let events = vec![
        event("tx", &[("signer", signer.clone()), ("fee", "40".into())]),
        event("message", &[("sender", signer.clone())]),
        event(
            "bank.transfer",
            &[
                ("from", signer.clone()),
                ("to", fee_pool),
                ("amount", "40".into()),
            ],
        ),
        event(
            "bank.transfer",
            &[
                ("from", signer.clone()),
                ("to", addr(5).to_string()),
                ("amount", "7".into()),
            ],
        ),
    ];
    m.ingest(block(1, vec![tx("T1", 4, vec![], 0, events)], vec![]));
    let history = m.history(&format!("account/{signer}"));
    assert_eq!(
        history.len(),
        1,
        "only the transfer to another account: {history:?}"
    );
    assert_eq!(history[0].attr("amount"), Some("7"));
    assert_eq!(m.recent_events.len(), 1);
}
