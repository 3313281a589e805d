//! The chain: the overview, blocks, transactions with their decoded messages and results,
//! validators with power and signing record, accounts, and the explorer's own status.

use std::collections::BTreeMap;

use gpuchain_auction::{AuctionRead, OrderState};
use gpuchain_slashing::SlashingRead;
use gpuchain_staking::StakingRead;
use gpuchain_verify::VerifyRead;
use serde_json::json;

use super::html::{self, esc};
use super::providers::parse_address;
use super::{App, Page, Problem, Reply};
use crate::ingest::read_block;
use crate::model::EventRow;
use crate::state::Module;

/// Attributes that hold ugpu amounts.
const AMOUNTS: [&str; 14] = [
    "price",
    "amount",
    "clearing_price",
    "escrowed",
    "paid",
    "refunded",
    "slashed",
    "burned",
    "max_price_per_replica",
    "validators",
    "community",
    "verification",
    "fee",
    "bonded",
];

fn attr_html(kind: &str, key: &str, value: &str) -> String {
    let market = if kind.starts_with("serving.") {
        "/serving"
    } else {
        ""
    };
    match key {
        "order_id" => format!("<a href=\"{market}/orders/{0}\">{0}</a>", esc(value)),
        "lease_id" => format!("<a href=\"{market}/leases/{0}\">{0}</a>", esc(value)),
        _ if value.starts_with("gpu1") && value.len() > 20 => {
            if key == "provider" || key == "subject" {
                html::addr_at("/providers", value)
            } else {
                html::addr_at("/accounts", value)
            }
        }
        _ if AMOUNTS.contains(&key) => match value.parse::<u128>() {
            Ok(v) => html::gpu(v),
            Err(_) => esc(value),
        },
        _ => esc(value),
    }
}

/// One event's attributes as `key value` pairs with links and units.
pub(super) fn attrs_html(event: &EventRow) -> String {
    event
        .attrs
        .iter()
        .map(|(k, v)| {
            format!(
                "<span class=\"kv\"><span class=\"k\">{}</span> {}</span>",
                esc(k),
                attr_html(&event.kind, k, v)
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Events, newest first, at most `limit`.
pub(super) fn event_table(id: &str, events: &[EventRow], limit: usize, empty: &str) -> String {
    let rows: Vec<Vec<String>> = events
        .iter()
        .rev()
        .take(limit)
        .map(|e| {
            let class = if e.kind.contains("slash") || e.attr("state") == Some("faulted") {
                "tag bad"
            } else {
                "tag"
            };
            vec![
                html::height_link(e.height),
                format!("<span class=\"{class}\">{}</span>", esc(&e.kind)),
                attrs_html(e),
                e.tx.as_ref()
                    .map(|t| html::hash_link("/txs", t))
                    .unwrap_or_else(|| "end of block".into()),
            ]
        })
        .collect();
    html::table(
        id,
        &["Height", "Event", "Details", "Transaction"].map(String::from),
        &rows,
        empty,
    )
}

/// `/`.
pub(super) async fn overview(app: &App, _q: &BTreeMap<String, String>) -> Result<Reply, Problem> {
    let (head, snap) = app
        .snapshot(&[
            Module::Staking,
            Module::Auction,
            Module::Verify,
            Module::Bank,
        ])
        .await?;
    let state = &snap.state;
    let (blocks, events, chain_id, head_row, tx_count) = {
        let m = app.0.model.read().await;
        (
            m.blocks.iter().rev().take(10).cloned().collect::<Vec<_>>(),
            m.recent_events.iter().cloned().collect::<Vec<_>>(),
            m.chain_id.clone(),
            m.head().cloned(),
            m.tx_count,
        )
    };
    let progress = app.0.progress.read().await.clone();
    let providers = state.providers().len();
    let open_orders = state
        .orders()
        .iter()
        .filter(|o| o.state == OrderState::Open)
        .count();
    let leases = state.leases().len();
    let verifiers = state.verifiers().len();
    let validators = state.validators().len();
    let mut body = html::facts(&[
        ("Chain", esc(&chain_id)),
        (
            "Height",
            format!(
                "<span id=\"overview-height\">{}</span>{}",
                head,
                head_row
                    .as_ref()
                    .map(|b| format!(" at {}", esc(&b.time)))
                    .unwrap_or_default()
            ),
        ),
        (
            "Providers",
            format!("<a href=\"/providers\">{providers}</a>"),
        ),
        (
            "Open orders",
            format!("<a href=\"/market\">{open_orders}</a>"),
        ),
        ("Leases in state", leases.to_string()),
        (
            "Verifiers",
            format!("<a href=\"/verification\">{verifiers}</a>"),
        ),
        (
            "Validators",
            format!("<a href=\"/validators\">{validators}</a>"),
        ),
        ("Supply", html::gpu(snap.supply)),
        ("Transactions read", html::thousands(u128::from(tx_count))),
        (
            "Read model",
            match progress.rebuild_ms {
                Some(ms) => format!("rebuilt from {} blocks in {} ms", progress.target, ms),
                None => format!(
                    "rebuilding: {} of {} blocks read",
                    progress.ingested, progress.target
                ),
            },
        ),
    ]);
    body.push_str("<h2>Pools</h2>");
    let rows: Vec<Vec<String>> = snap
        .pools
        .iter()
        .map(|p| vec![esc(p.name), html::addr(&p.address), html::gpu(p.balance)])
        .collect();
    body.push_str(&html::table(
        "pools",
        &["Pool", "Account", "Balance"].map(String::from),
        &rows,
        "No pool.",
    ));
    body.push_str("<h2>Latest blocks</h2>");
    body.push_str(&block_table(
        &blocks,
        head_row.as_ref().map_or(0, |b| b.unix),
    ));
    body.push_str("<h2>Activity</h2>");
    body.push_str(&event_table(
        "activity",
        &events,
        30,
        "Nothing has happened yet: the chain is producing empty blocks.",
    ));
    Ok(Page {
        title: "Overview".into(),
        active: "/",
        json: json!({
            "chain_id": chain_id, "height": head, "head": head_row, "providers": providers,
            "open_orders": open_orders, "leases": leases, "verifiers": verifiers,
            "validators": validators, "supply": snap.supply, "pools": snap.pools,
            "read_model": progress, "blocks": blocks,
        }),
        body,
    }
    .into())
}

fn block_table(blocks: &[crate::model::BlockRow], now: i64) -> String {
    let rows: Vec<Vec<String>> = blocks
        .iter()
        .map(|b| {
            vec![
                html::height_link(b.height),
                format!("{} ago", html::duration(now - b.unix)),
                html::hash_link("/blocks", &b.hash).replace(
                    &format!("/blocks/{}", b.hash),
                    &format!("/blocks/{}", b.height),
                ),
                b.txs.to_string()
                    + if b.failed_txs > 0 {
                        " (some failed)"
                    } else {
                        ""
                    },
                b.events.to_string(),
            ]
        })
        .collect();
    html::table(
        "blocks",
        &["Height", "Age", "Hash", "Txs", "Events"].map(String::from),
        &rows,
        "No block read yet.",
    )
}

/// `/blocks`.
pub(super) async fn blocks(app: &App, _q: &BTreeMap<String, String>) -> Result<Reply, Problem> {
    let (blocks, now, recent_txs) = {
        let m = app.0.model.read().await;
        (
            m.blocks.iter().rev().take(100).cloned().collect::<Vec<_>>(),
            m.head().map_or(0, |b| b.unix),
            m.recent_txs
                .iter()
                .rev()
                .take(50)
                .cloned()
                .collect::<Vec<_>>(),
        )
    };
    let mut body = block_table(&blocks, now);
    body.push_str("<h2>Latest transactions</h2>");
    body.push_str(&tx_table(&recent_txs));
    Ok(Page {
        title: "Blocks".into(),
        active: "/blocks",
        json: json!({"blocks": blocks, "txs": recent_txs}),
        body,
    }
    .into())
}

fn tx_table(txs: &[crate::model::TxRow]) -> String {
    let rows: Vec<Vec<String>> = txs
        .iter()
        .map(|t| {
            vec![
                html::hash_link("/txs", &t.hash),
                html::height_link(t.height),
                t.signer
                    .as_ref()
                    .map(html::addr)
                    .unwrap_or_else(|| "undecodable".into()),
                esc(&t.msgs.join(", ")),
                if t.code == 0 {
                    "<span class=\"tag good\">ok</span>".into()
                } else {
                    format!("<span class=\"tag bad\">code {}</span>", t.code)
                },
            ]
        })
        .collect();
    html::table(
        "txs",
        &["Hash", "Height", "Signer", "Messages", "Result"].map(String::from),
        &rows,
        "No transaction yet.",
    )
}

/// `/blocks/{height}`: read from the node (the model keeps only recent rows).
pub(super) async fn block(app: &App, raw: &str) -> Result<Reply, Problem> {
    let height: u64 = raw.parse().map_err(|_| {
        Problem::bad(
            format!("{raw:?} is not a block height"),
            "heights are whole numbers from 1, e.g. /blocks/1",
        )
    })?;
    let (head, earliest) = {
        let m = app.0.model.read().await;
        (m.height(), m.earliest)
    };
    if height == 0 || height > head {
        return Err(Problem::absent(
            format!("block {height} does not exist yet"),
            format!("the chain is at height {head}; this page can be opened once it gets there"),
        ));
    }
    if height < earliest {
        return Err(Problem::absent(
            format!("block {height} is not kept by this node"),
            format!(
                "the node keeps blocks from height {earliest}; ask an archive node for older ones"
            ),
        ));
    }
    let results = gpuchain_client::follow::block_results(&app.0.client, height)
        .await
        .map_err(|e| app.unreachable(&e))?;
    let block = read_block(&app.0.client, results)
        .await
        .map_err(|e| app.unreachable(&e))?;
    let row = block.row.clone();
    let mut body = html::facts(&[
        ("Height", html::thousands(u128::from(row.height))),
        ("Time", esc(&row.time)),
        ("Hash", format!("<code>{}</code>", esc(&row.hash))),
        ("Proposer", format!("<code>{}</code>", esc(&row.proposer))),
        ("Transactions", row.txs.to_string()),
        (
            "Previous",
            if height > 1 {
                html::height_link(height - 1)
            } else {
                "genesis".into()
            },
        ),
        (
            "Next",
            if height < head {
                html::height_link(height + 1)
            } else {
                "not yet".into()
            },
        ),
    ]);
    body.push_str("<h2>Transactions</h2>");
    let txs: Vec<serde_json::Value> = block
        .txs
        .iter()
        .map(|t| {
            json!({
                "hash": t.hash, "code": t.code,
                "signer": t.decoded.as_ref().map(|(s, _)| s.to_string()),
                "msgs": t.decoded.as_ref().map(|(_, m)| m.clone()),
            })
        })
        .collect();
    let rows: Vec<crate::model::TxRow> = block
        .txs
        .iter()
        .map(|t| crate::model::TxRow {
            hash: t.hash.clone(),
            height,
            signer: t.decoded.as_ref().map(|(s, _)| *s),
            msgs: t
                .decoded
                .as_ref()
                .map(|(_, m)| m.iter().map(|m| m.name().to_string()).collect())
                .unwrap_or_default(),
            code: t.code,
        })
        .collect();
    body.push_str(&tx_table(&rows));
    let events: Vec<EventRow> = block
        .block_events
        .iter()
        .map(|e| EventRow {
            height,
            tx: None,
            kind: e.kind.clone(),
            attrs: e.attrs.clone(),
        })
        .collect();
    body.push_str("<h2>End-of-block events</h2>");
    body.push_str(&event_table(
        "block-events",
        &events,
        500,
        "No end-of-block event.",
    ));
    Ok(Page {
        title: format!("Block {height}"),
        active: "/blocks",
        json: json!({"block": row, "txs": txs, "block_events": events}),
        body,
    }
    .into())
}

/// Whether `raw` is a transaction hash: 64 hex digits.
pub(super) fn is_tx_hash(raw: &str) -> bool {
    raw.len() == 64 && raw.chars().all(|c| c.is_ascii_hexdigit())
}

/// `/txs/{hash}`: read from the node, decoded with x/tx's types.
pub(super) async fn tx(app: &App, raw: &str) -> Result<Reply, Problem> {
    if !is_tx_hash(raw) {
        return Err(Problem::bad(
            format!("{raw:?} is not a transaction hash"),
            "a transaction hash is 64 hex digits, as `gpuchaind tx …` prints it",
        ));
    }
    let hash = raw.to_uppercase();
    let outcome = app
        .0
        .client
        .tx_outcome(&hash)
        .await
        .map_err(|e| app.unreachable(&e))?;
    let Some(outcome) = outcome else {
        return Err(Problem::absent(
            format!("no block holds transaction {hash}"),
            "it may not be included yet (try again in a block), it may have been refused by \
             CheckTx, or it was sent to another chain",
        ));
    };
    let results = gpuchain_client::follow::block_results(&app.0.client, outcome.height)
        .await
        .map_err(|e| app.unreachable(&e))?;
    let block = read_block(&app.0.client, results)
        .await
        .map_err(|e| app.unreachable(&e))?;
    let decoded = block
        .txs
        .iter()
        .find(|t| t.hash == hash)
        .and_then(|t| t.decoded.clone());
    let mut facts = vec![
        (
            "Hash",
            format!("<code id=\"tx-hash\">{}</code>", esc(&hash)),
        ),
        ("Block", html::height_link(outcome.height)),
        (
            "Result",
            if outcome.code == 0 {
                "<span class=\"tag good\">success</span>".to_string()
            } else {
                format!(
                    "<span class=\"tag bad\">failed: code {} ({})</span> {}",
                    outcome.code,
                    esc(&outcome.codespace),
                    esc(&outcome.log)
                )
            },
        ),
        (
            "Gas used",
            html::thousands(u128::try_from(outcome.gas_used).unwrap_or(0)),
        ),
    ];
    if let Some((signer, _)) = &decoded {
        facts.push(("Signer", html::addr(signer)));
    }
    let mut body = html::facts(&facts);
    body.push_str("<h2>Messages</h2>");
    match &decoded {
        Some((_, msgs)) => {
            for m in msgs {
                let pretty = serde_json::to_string_pretty(m).unwrap_or_default();
                body.push_str(&format!(
                    "<h3 class=\"msg-name\">{}</h3><pre class=\"msg\">{}</pre>",
                    esc(m.name()),
                    esc(&pretty)
                ));
            }
        }
        None => body
            .push_str("<p class=\"empty\">The bytes do not decode as a gpuchain transaction.</p>"),
    }
    let events: Vec<EventRow> = outcome
        .events
        .iter()
        .map(|(kind, attrs)| EventRow {
            height: outcome.height,
            tx: Some(hash.clone()),
            kind: kind.clone(),
            attrs: attrs.clone(),
        })
        .collect();
    body.push_str("<h2>Events</h2>");
    body.push_str(&event_table(
        "tx-events",
        &events,
        500,
        "No event (a failed transaction keeps only its fee).",
    ));
    Ok(Page {
        title: "Transaction".into(),
        active: "/blocks",
        json: json!({
            "hash": hash, "height": outcome.height, "code": outcome.code, "log": outcome.log,
            "gas_used": outcome.gas_used,
            "signer": decoded.as_ref().map(|(s, _)| s.to_string()),
            "msgs": decoded.as_ref().map(|(_, m)| m.clone()),
            "events": events,
        }),
        body,
    }
    .into())
}

/// `/validators`.
pub(super) async fn validators(app: &App, _q: &BTreeMap<String, String>) -> Result<Reply, Problem> {
    let (head, snap) = app.snapshot(&[Module::Staking, Module::Slashing]).await?;
    let state = &snap.state;
    let params = state.staking_params();
    let proposed: BTreeMap<String, usize> = {
        let m = app.0.model.read().await;
        let mut counts = BTreeMap::new();
        for b in &m.blocks {
            *counts.entry(b.proposer.clone()).or_default() += 1;
        }
        counts
    };
    let validators = state.validators();
    let rows: Vec<Vec<String>> = validators
        .iter()
        .map(|v| {
            let signing = state.signing_info(&v.consensus_address);
            let cons = hex::encode_upper(v.consensus_address);
            vec![
                esc(&v.moniker),
                html::addr(&v.operator),
                html::gpu(v.bonded),
                v.power(params.power_reduction).to_string(),
                signing
                    .map(|s| format!("missed {} of the last {}", s.missed, s.window))
                    .unwrap_or_else(|| "—".into()),
                proposed.get(&cons).copied().unwrap_or(0).to_string(),
                if v.tombstoned {
                    "<span class=\"tag bad\">tombstoned</span>".into()
                } else if v.jailed {
                    format!(
                        "<span class=\"tag bad\">jailed until {}</span>",
                        v.jailed_until
                    )
                } else {
                    "<span class=\"tag good\">active</span>".into()
                },
            ]
        })
        .collect();
    let body = html::table(
        "validators",
        &[
            "Moniker",
            "Operator",
            "Bond",
            "Power",
            "Signing",
            "Proposed (recent blocks)",
            "Status",
        ]
        .map(String::from),
        &rows,
        "No validator (the chain would not run without one).",
    );
    Ok(Page {
        title: "Validators".into(),
        active: "/validators",
        json: json!({"height": head, "validators": validators}),
        body,
    }
    .into())
}

/// `/accounts/{address}`.
pub(super) async fn account(app: &App, raw: &str) -> Result<Reply, Problem> {
    let address = parse_address(raw)?;
    let (head, snap) = app
        .snapshot(&[
            Module::Staking,
            Module::Verify,
            Module::Auction,
            Module::Bank,
        ])
        .await?;
    let state = &snap.state;
    let balance = app
        .0
        .client
        .balance(&address)
        .await
        .map_err(|e| app.unreachable(&e))?;
    let nonce = app
        .0
        .client
        .nonce(&address)
        .await
        .map_err(|e| app.unreachable(&e))?;
    let (txs, history) = {
        let m = app.0.model.read().await;
        (
            m.account_txs
                .get(&address.to_string())
                .map(|q| q.iter().rev().cloned().collect::<Vec<_>>())
                .unwrap_or_default(),
            m.history(&format!("account/{address}")),
        )
    };
    let mut roles = Vec::new();
    if state.provider(&address).is_some() {
        roles.push(format!("<a href=\"/providers/{address}\">provider</a>"));
    }
    if state.verifier(&address).is_some() {
        roles.push("<a href=\"/verification\">verifier</a>".to_string());
    }
    if state.validator(&address).is_some() {
        roles.push("<a href=\"/validators\">validator</a>".to_string());
    }
    if let Some(pool) = snap.pools.iter().find(|p| p.address == address) {
        roles.push(format!("module account {}", esc(pool.name)));
    }
    let orders: Vec<_> = state.orders_of_client(&address);
    if !orders.is_empty() {
        roles.push(format!("client of {} orders", orders.len()));
    }
    let known = !txs.is_empty() || !history.is_empty() || balance > 0 || !roles.is_empty();
    if !known {
        return Err(Problem::absent(
            format!("nothing on chain names {address}"),
            "the address is well formed but holds no balance, sent no transaction and appears in no event the explorer has read",
        ));
    }
    let mut body = html::facts(&[
        ("Address", format!("<code>{address}</code> <button type=\"button\" class=\"copy\" data-copy=\"{address}\">copy</button>")),
        ("Balance", html::gpu(balance)),
        ("Next nonce", nonce.to_string()),
        ("Roles", if roles.is_empty() { "none".into() } else { roles.join(", ") }),
    ]);
    body.push_str("<h2>Transactions</h2>");
    body.push_str(&tx_table(&txs));
    body.push_str("<h2>Events</h2>");
    body.push_str(&event_table(
        "history",
        &history,
        100,
        "No event names this account.",
    ));
    Ok(Page {
        title: format!("Account {}", super::providers::short(&address.to_string())),
        active: "",
        json: json!({"height": head, "address": address, "balance": balance, "nonce": nonce, "txs": txs, "history": history}),
        body,
    }
    .into())
}

/// `/status`: the explorer's own state (the rebuild, memory held).
pub(super) async fn status(app: &App, _q: &BTreeMap<String, String>) -> Result<Reply, Problem> {
    let progress = app.0.progress.read().await.clone();
    let (height, bytes, objects, txs) = {
        let m = app.0.model.read().await;
        (m.height(), m.approx_bytes(), m.objects.len(), m.tx_count)
    };
    let body = html::facts(&[
        ("Head", height.to_string()),
        ("Blocks read", progress.ingested.to_string()),
        (
            "Rebuild",
            progress
                .rebuild_ms
                .map(|ms| format!("{ms} ms for {} blocks", progress.target))
                .unwrap_or_else(|| "in progress".into()),
        ),
        ("Objects indexed", objects.to_string()),
        ("Transactions read", txs.to_string()),
        ("Read model size", format!("about {} KiB", bytes / 1024)),
    ]);
    Ok(Page {
        title: "Explorer status".into(),
        active: "",
        json: json!({"height": height, "progress": progress, "model_bytes": bytes, "objects": objects, "txs": txs}),
        body,
    }
    .into())
}
