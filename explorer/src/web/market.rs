//! The market: open orders with their live auctions, recent clearings and the price of each
//! kind of work over time, leases by state, serving orders; one page per order and lease.

use std::collections::BTreeMap;

use gpuchain_auction::{AuctionRead, Order, OrderState};
use gpuchain_serving::{ServingLeaseState, ServingOrderState, ServingRead};
use gpuchain_types::{StateRead, StateReadExt};
use gpuchain_verify::VerifyRead;
use serde_json::json;

use super::html::{self, esc};
use super::{parse_id, App, Page, Problem, Reply};
use crate::state::Module;

/// A lease state as a coloured tag.
pub(super) fn lease_state(name: &str) -> String {
    let class = match name {
        "paid" | "accepted" | "closed" => "good",
        "faulted" | "missed" | "dropped" | "refunded" => "bad",
        _ => "",
    };
    format!("<span class=\"tag {class}\">{}</span>", esc(name))
}

/// A serving lease's state name.
pub(super) fn serving_lease_state(state: ServingLeaseState) -> &'static str {
    match state {
        ServingLeaseState::Serving => "serving",
        ServingLeaseState::Dropped => "dropped",
        ServingLeaseState::Closed => "closed",
    }
}

fn serving_order_state(state: ServingOrderState) -> &'static str {
    match state {
        ServingOrderState::Bidding => "bidding",
        ServingOrderState::Serving => "serving",
        ServingOrderState::Closed => "closed",
    }
}

fn order_state(state: OrderState) -> &'static str {
    match state {
        OrderState::Open => "open",
        OrderState::Cleared => "cleared",
        OrderState::Settled => "settled",
        OrderState::Cancelled => "cancelled",
        OrderState::Expired => "expired",
    }
}

fn next_id(state: &impl StateRead, key: &str) -> u64 {
    state.get::<u64>(key).unwrap_or(1)
}

fn order_row(o: &Order, head: u64, bids: &[gpuchain_auction::Bid]) -> Vec<String> {
    let best = bids.iter().map(|b| b.price).min();
    vec![
        format!("<a href=\"/orders/{0}\">{0}</a>", o.id),
        html::addr(&o.client),
        esc(o.job.kind().name()),
        o.replicas.to_string(),
        html::gpu(o.max_price_per_replica),
        bids.len().to_string(),
        best.map(html::gpu).unwrap_or_else(|| "—".into()),
        if o.bid_end_height > head {
            format!("in {} blocks", o.bid_end_height - head)
        } else {
            "clearing".into()
        },
    ]
}

/// `/market`.
pub(super) async fn overview(app: &App, q: &BTreeMap<String, String>) -> Result<Reply, Problem> {
    let page =
        html::page_number(q).map_err(|e| Problem::bad(e, "remove page= or give a page number"))?;
    let (head, snap) = app.snapshot(&[Module::Auction, Module::Serving]).await?;
    let state = &snap.state;
    let orders = state.orders();
    let open: Vec<&Order> = orders
        .iter()
        .filter(|o| o.state == OrderState::Open)
        .collect();
    let leases = state.leases();
    let mut by_state: BTreeMap<&'static str, usize> = BTreeMap::new();
    for l in &leases {
        *by_state.entry(l.state.name()).or_default() += 1;
    }
    let serving_orders = state.serving_orders();
    let serving_leases = state.serving_leases();
    let (clearings, prices) = {
        let m = app.0.model.read().await;
        (
            m.clearings
                .iter()
                .rev()
                .take(50)
                .cloned()
                .collect::<Vec<_>>(),
            m.prices.clone(),
        )
    };

    let mut body = format!(
        "<p class=\"lead\">{} open orders, {} leases in state, {} serving orders. Next order id: \
         <span id=\"next-order-id\">{}</span>.</p>",
        open.len(),
        leases.len(),
        serving_orders.len(),
        next_id(state, gpuchain_auction::state_key::next_order_id())
    );
    body.push_str("<h2>Open orders</h2>");
    // Newest first, one page at a time.
    let newest: Vec<&Order> = open.iter().rev().copied().collect();
    let shown = &newest[html::page_range(page, newest.len())];
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|o| order_row(o, head, &state.bids(o.id)))
        .collect();
    body.push_str(&html::table(
        "open-orders",
        &["Order", "Client", "Kind", "Replicas", "Max price", "Bids", "Best bid", "Bidding ends"]
            .map(String::from),
        &rows,
        "No order is taking bids. A client posts one with `gpuchaind tx auction post-order` (README, Using the CLI).",
    ));
    body.push_str(&html::pager("open-orders-pages", page, newest.len(), |n| {
        format!("/market?page={n}")
    }));

    body.push_str("<h2>Prices over time</h2>");
    let series: Vec<(String, Vec<(u64, f64)>)> = prices
        .iter()
        .map(|(label, points)| {
            (
                label.clone(),
                points
                    .iter()
                    .map(|p| (p.height, p.price as f64 / 1e6))
                    .collect(),
            )
        })
        .collect();
    let chart = html::chart("price-chart", "height", "clearing price (GPU)", &series);
    if chart.is_empty() {
        body.push_str("<p class=\"empty\">No order has cleared yet; each clearing adds a point per job kind and machine class.</p>");
    } else {
        body.push_str(&chart);
    }

    body.push_str("<h2>Recent clearings</h2>");
    let rows: Vec<Vec<String>> = clearings
        .iter()
        .map(|c| {
            vec![
                if c.market == "serving" {
                    format!(
                        "<a href=\"/serving/orders/{0}\">serving {0}</a>",
                        c.order_id
                    )
                } else {
                    format!("<a href=\"/orders/{0}\">{0}</a>", c.order_id)
                },
                esc(&c.series),
                if c.market == "serving" {
                    format!("{} / M units", html::gpu(c.price))
                } else {
                    html::gpu(c.price)
                },
                c.winners.to_string(),
                c.bids.map(|b| b.to_string()).unwrap_or_else(|| "—".into()),
                format!(
                    "{} ({})",
                    html::height_link(c.height),
                    html::blocks_ago(c.height, head)
                ),
            ]
        })
        .collect();
    body.push_str(&html::table(
        "clearings",
        &[
            "Order",
            "Kind · class",
            "Price",
            "Leases",
            "Bids",
            "Cleared",
        ]
        .map(String::from),
        &rows,
        "No clearing yet.",
    ));

    body.push_str("<h2>Leases by state</h2>");
    let rows: Vec<Vec<String>> = by_state
        .iter()
        .map(|(s, n)| vec![lease_state(s), n.to_string()])
        .collect();
    body.push_str(&html::table(
        "lease-states",
        &["State", "Leases"].map(String::from),
        &rows,
        "No lease in state.",
    ));
    let rows: Vec<Vec<String>> = leases
        .iter()
        .rev()
        .take(50)
        .map(|l| {
            vec![
                format!("<a href=\"/leases/{0}\">{0}</a>", l.id),
                format!("<a href=\"/orders/{0}\">{0}</a>", l.order_id),
                html::addr_at("/providers", &l.provider.to_string()),
                lease_state(l.state.name()),
                html::gpu(l.price),
            ]
        })
        .collect();
    body.push_str(&html::table(
        "leases",
        &["Lease", "Order", "Provider", "State", "Price"].map(String::from),
        &rows,
        "No lease yet.",
    ));

    body.push_str("<h2>Serving</h2>");
    let rows: Vec<Vec<String>> = serving_orders
        .iter()
        .rev()
        .take(100)
        .map(|o| {
            vec![
                format!("<a href=\"/serving/orders/{0}\">{0}</a>", o.id),
                esc(&o.model.name),
                esc(o.model.kind.name()),
                serving_order_state(o.state).to_string(),
                o.providers.to_string(),
                if o.price > 0 {
                    format!("{} / M units", html::gpu(o.price))
                } else {
                    "—".into()
                },
                html::gpu(o.deposit),
            ]
        })
        .collect();
    body.push_str(&html::table(
        "serving-orders",
        &[
            "Order",
            "Model",
            "Kind",
            "State",
            "Providers",
            "Price",
            "Deposit",
        ]
        .map(String::from),
        &rows,
        "No serving order. A client opens one with `gpuchaind tx serving open` (docs/serving.md).",
    ));

    Ok(Page {
        title: "Market".into(),
        active: "/market",
        json: json!({
            "height": head,
            "next_order_id": next_id(state, gpuchain_auction::state_key::next_order_id()),
            "open_orders_total": open.len(),
            "page": page,
            "per_page": html::PER_PAGE,
            "open_orders": shown,
            "clearings": clearings,
            "prices": prices,
            "lease_states": by_state,
            "serving_orders": serving_orders,
            "serving_leases": serving_leases.len(),
        }),
        body,
    }
    .into())
}

/// `/orders/{id}`.
pub(super) async fn order(app: &App, raw: &str) -> Result<Reply, Problem> {
    let id = parse_id("order", raw)?;
    let (head, snap) = app.snapshot(&[Module::Auction]).await?;
    let state = &snap.state;
    let (history, meta) = {
        let m = app.0.model.read().await;
        (
            m.history(&format!("auction/order/{id}")),
            m.orders.get(&id).cloned(),
        )
    };
    let next = next_id(state, gpuchain_auction::state_key::next_order_id());
    let Some(order) = state.order(id) else {
        if id >= next {
            return Err(Problem::absent(
                format!("order {id} has not been posted yet"),
                format!("the next order will be number {next}; this page shows it as soon as it is posted"),
            ));
        }
        let body = format!(
            "<p class=\"lead\">Order {id} was retired: closed orders are deleted from state a \
             retention period after they close. What the explorer saw of it:</p>{}",
            super::chain::event_table(
                "history",
                &history,
                200,
                "The explorer saw no event of it (it closed before the blocks this node keeps)."
            )
        );
        return Ok(Page {
            title: format!("Order {id}"),
            active: "/market",
            json: json!({"id": id, "retired": true, "history": history}),
            body,
        }
        .into());
    };
    let bids = state.bids(id);
    let leases = state.leases_of_order(id);
    let mut facts = vec![
        (
            "State",
            format!(
                "<span id=\"order-state\">{}</span>",
                order_state(order.state)
            ),
        ),
        ("Client", html::addr(&order.client)),
        (
            "Job",
            format!(
                "{} · {}",
                esc(order.job.kind().name()),
                esc(meta.as_ref().map_or("", |m| m.class.as_str()))
            ),
        ),
        ("Replicas", order.replicas.to_string()),
        (
            "Max price per replica",
            html::gpu(order.max_price_per_replica),
        ),
        ("Escrowed", html::gpu(order.escrowed)),
        ("Posted", html::height_link(order.created_height)),
        (
            "Bidding ends",
            format!(
                "{} ({})",
                html::height_link(order.bid_end_height),
                if order.bid_end_height > head {
                    format!("in {} blocks", order.bid_end_height - head)
                } else {
                    "ended".into()
                }
            ),
        ),
    ];
    if let Some(price) = order.clearing_price {
        facts.push((
            "Clearing price",
            format!("<span id=\"clearing-price\">{}</span>", html::gpu(price)),
        ));
    }
    if let Some(tx) = meta.as_ref().and_then(|m| m.posted_tx.clone()) {
        facts.push(("Posted by", html::hash_link("/txs", &tx)));
    }
    let mut body = html::facts(&facts);
    body.push_str("<h2>Bids</h2>");
    let rows: Vec<Vec<String>> = bids
        .iter()
        .map(|b| {
            vec![
                html::addr_at("/providers", &b.provider.to_string()),
                html::gpu(b.price),
                html::height_link(b.height),
            ]
        })
        .collect();
    body.push_str(&html::table(
        "bids",
        &["Provider", "Price", "Height"].map(String::from),
        &rows,
        if order.state == OrderState::Open {
            "No bid yet: eligible providers' agents bid within a block or two."
        } else {
            "No bid."
        },
    ));
    body.push_str("<h2>Leases</h2>");
    let rows: Vec<Vec<String>> = leases
        .iter()
        .map(|l| {
            vec![
                format!("<a href=\"/leases/{0}\">{0}</a>", l.id),
                html::addr_at("/providers", &l.provider.to_string()),
                lease_state(l.state.name()),
                html::gpu(l.price),
                l.payout_height
                    .map(html::height_link)
                    .unwrap_or_else(|| "—".into()),
            ]
        })
        .collect();
    body.push_str(&html::table(
        "order-leases",
        &["Lease", "Provider", "State", "Price", "Paid at"].map(String::from),
        &rows,
        "No lease: the order has not cleared.",
    ));
    body.push_str("<h2>History</h2>");
    body.push_str(&super::chain::event_table(
        "history",
        &history,
        200,
        "No event yet.",
    ));
    Ok(Page {
        title: format!("Order {id}"),
        active: "/market",
        json: json!({"height": head, "order": order, "bids": bids, "leases": leases, "history": history}),
        body,
    }
    .into())
}

/// `/leases/{id}`.
pub(super) async fn lease(app: &App, raw: &str) -> Result<Reply, Problem> {
    let id = parse_id("lease", raw)?;
    let (head, snap) = app.snapshot(&[Module::Auction, Module::Verify]).await?;
    let state = &snap.state;
    let history = app
        .0
        .model
        .read()
        .await
        .history(&format!("auction/lease/{id}"));
    let Some(lease) = state.lease(id) else {
        let next = next_id(state, gpuchain_auction::state_key::next_lease_id());
        return Err(Problem::absent(
            format!("lease {id} is not in state"),
            if id >= next {
                format!("no lease {id} exists yet; the next will be {next}")
            } else {
                "it was retired with its order; its order's page keeps what the explorer saw".into()
            },
        ));
    };
    let case = state.case(id);
    let mut body = html::facts(&[
        (
            "Order",
            format!("<a href=\"/orders/{0}\">{0}</a>", lease.order_id),
        ),
        (
            "Provider",
            html::addr_at("/providers", &lease.provider.to_string()),
        ),
        ("Client", html::addr(&lease.client)),
        ("State", lease_state(lease.state.name())),
        ("Price", html::gpu(lease.price)),
        ("Created", html::height_link(lease.created_height)),
        ("Commit deadline", html::height_link(lease.deadline_height)),
        ("Reveal ends", html::height_link(lease.reveal_end_height)),
        (
            "Result",
            lease
                .result_hash
                .map(hex::encode)
                .map(|h| format!("<code>{h}</code>"))
                .unwrap_or_else(|| "not revealed".into()),
        ),
        (
            "Paid at",
            lease
                .payout_height
                .map(html::height_link)
                .unwrap_or_else(|| "—".into()),
        ),
    ]);
    if let Some(case) = &case {
        body.push_str("<h2>Verification case</h2>");
        let rows: Vec<Vec<String>> = case
            .verdicts
            .iter()
            .map(|v| {
                vec![
                    html::addr(&v.verifier),
                    format!("{:?}", v.verdict).to_lowercase(),
                    html::height_link(v.height),
                ]
            })
            .collect();
        body.push_str(&format!(
            "<p>Round {}, stage {}, deadline {}.</p>",
            case.round,
            format!("{:?}", case.stage).to_lowercase(),
            html::height_link(case.deadline_height)
        ));
        body.push_str(&html::table(
            "verdicts",
            &["Verifier", "Verdict", "Height"].map(String::from),
            &rows,
            "No verdict yet.",
        ));
    }
    body.push_str("<h2>History</h2>");
    body.push_str(&super::chain::event_table(
        "history",
        &history,
        200,
        "No event yet.",
    ));
    Ok(Page {
        title: format!("Lease {id}"),
        active: "/market",
        json: json!({"height": head, "lease": lease, "case": case, "history": history}),
        body,
    }
    .into())
}

/// `/serving/orders/{id}`.
pub(super) async fn serving_order(app: &App, raw: &str) -> Result<Reply, Problem> {
    let id = parse_id("serving order", raw)?;
    let (head, snap) = app.snapshot(&[Module::Serving]).await?;
    let state = &snap.state;
    let history = app
        .0
        .model
        .read()
        .await
        .history(&format!("serving/order/{id}"));
    let Some(order) = state.serving_order(id) else {
        return Err(Problem::absent(
            format!("serving order {id} is not in state"),
            "it was never opened, or it closed and was retired",
        ));
    };
    let bids = state.serving_bids(id);
    let mut body = html::facts(&[
        ("Client", html::addr(&order.client)),
        (
            "Model",
            format!(
                "{} ({}) <code>{}</code>",
                esc(&order.model.name),
                esc(order.model.kind.name()),
                hex::encode(order.model.blake3)
            ),
        ),
        ("State", serving_order_state(order.state).to_string()),
        ("Providers wanted", order.providers.to_string()),
        (
            "Ceiling price",
            format!("{} / M units", html::gpu(order.max_price)),
        ),
        (
            "Price",
            if order.price > 0 {
                format!(
                    "<span id=\"clearing-price\">{} / M units</span>",
                    html::gpu(order.price)
                )
            } else {
                "not cleared".into()
            },
        ),
        ("Deposit", html::gpu(order.deposit)),
        ("Bidding ends", html::height_link(order.bid_end_height)),
        (
            "Ends",
            if order.end_height > 0 {
                html::height_link(order.end_height)
            } else {
                "—".into()
            },
        ),
    ]);
    let rows: Vec<Vec<String>> = bids
        .iter()
        .map(|b| {
            vec![
                html::addr_at("/providers", &b.provider.to_string()),
                format!("{} / M units", html::gpu(b.price)),
                html::height_link(b.height),
            ]
        })
        .collect();
    body.push_str("<h2>Bids</h2>");
    body.push_str(&html::table(
        "bids",
        &["Provider", "Price", "Height"].map(String::from),
        &rows,
        "No bid yet.",
    ));
    let rows: Vec<Vec<String>> = order
        .leases
        .iter()
        .filter_map(|l| state.serving_lease(*l))
        .map(|l| {
            vec![
                format!("<a href=\"/serving/leases/{0}\">{0}</a>", l.id),
                html::addr_at("/providers", &l.provider.to_string()),
                lease_state(serving_lease_state(l.state)),
                thousands_units(l.units),
                html::gpu(l.paid),
            ]
        })
        .collect();
    body.push_str("<h2>Leases</h2>");
    body.push_str(&html::table(
        "serving-leases",
        &["Lease", "Provider", "State", "Units served", "Paid"].map(String::from),
        &rows,
        "No lease: the order has not cleared.",
    ));
    body.push_str("<h2>History</h2>");
    body.push_str(&super::chain::event_table(
        "history",
        &history,
        200,
        "No event yet.",
    ));
    Ok(Page {
        title: format!("Serving order {id}"),
        active: "/market",
        json: json!({"height": head, "order": order, "bids": bids, "history": history}),
        body,
    }
    .into())
}

fn thousands_units(units: u128) -> String {
    html::thousands(units)
}

/// `/serving/leases/{id}`.
pub(super) async fn serving_lease(app: &App, raw: &str) -> Result<Reply, Problem> {
    let id = parse_id("serving lease", raw)?;
    let (head, snap) = app.snapshot(&[Module::Serving]).await?;
    let state = &snap.state;
    let history = app
        .0
        .model
        .read()
        .await
        .history(&format!("serving/lease/{id}"));
    let Some(lease) = state.serving_lease(id) else {
        return Err(Problem::absent(
            format!("serving lease {id} is not in state"),
            "it never existed, or its order closed and was retired",
        ));
    };
    let claims: Vec<_> = state
        .serving_claims()
        .into_iter()
        .filter(|c| c.lease_id == id)
        .collect();
    let mut body = html::facts(&[
        (
            "Order",
            format!("<a href=\"/serving/orders/{0}\">{0}</a>", lease.order_id),
        ),
        (
            "Provider",
            html::addr_at("/providers", &lease.provider.to_string()),
        ),
        ("Client", html::addr(&lease.client)),
        ("Model", esc(&lease.model.name)),
        ("Endpoint", format!("<code>{}</code>", esc(&lease.endpoint))),
        ("State", lease_state(serving_lease_state(lease.state))),
        ("Price", format!("{} / M units", html::gpu(lease.price))),
        ("Requests acknowledged", lease.next_seq.to_string()),
        ("Units served", thousands_units(lease.units)),
        ("Paid", html::gpu(lease.paid)),
        ("Open claims", lease.open_claims.to_string()),
        (
            "Liveness report",
            lease
                .report_deadline
                .map(|d| format!("<span class=\"bad\">answer by height {d}</span>"))
                .unwrap_or_else(|| "none".into()),
        ),
    ]);
    let rows: Vec<Vec<String>> = claims
        .iter()
        .map(|c| {
            vec![
                c.id.to_string(),
                format!("{}–{}", c.first_seq, c.end_seq),
                c.count.to_string(),
                html::gpu(c.amount),
                format!("{:?}", c.stage).to_lowercase(),
            ]
        })
        .collect();
    body.push_str("<h2>Open claims</h2>");
    body.push_str(&html::table(
        "claims",
        &["Claim", "Requests", "Count", "Amount", "Stage"].map(String::from),
        &rows,
        "No open claim.",
    ));
    body.push_str("<h2>History</h2>");
    body.push_str(&super::chain::event_table(
        "history",
        &history,
        200,
        "No event yet.",
    ));
    Ok(Page {
        title: format!("Serving lease {id}"),
        active: "/market",
        json: json!({"height": head, "lease": lease, "claims": claims, "history": history, "head": head}),
        body,
    }
    .into())
}
