//! Search: an address, a transaction hash, a height, an order or lease id (`order 12`,
//! `lease 3`, or a bare number, which may be any of them).

use std::collections::BTreeMap;

use gpuchain_auction::AuctionRead;
use gpuchain_serving::ServingRead;
use gpuchain_staking::StakingRead;
use serde_json::json;

use super::chain::is_tx_hash;
use super::html::esc;
use super::providers::parse_address;
use super::{App, Page, Problem, Reply};
use crate::state::Module;

/// What a query names, before looking anything up.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Query {
    /// A transaction hash (upper-case).
    Tx(String),
    /// An address.
    Address(String),
    /// `order N`.
    Order(u64),
    /// `lease N`.
    Lease(u64),
    /// `block N`.
    Block(u64),
    /// A bare number: a height, an order, a lease, a serving order or lease.
    Number(u64),
}

/// Reads a query, or says what it may be.
pub(super) fn parse(raw: &str) -> Result<Query, Problem> {
    let q = raw.trim().trim_start_matches('#');
    if q.is_empty() {
        return Err(Problem::bad(
            "nothing to search for",
            "type an address (gpu1…), a transaction hash (64 hex digits), a height, or `order 12` / `lease 3`",
        ));
    }
    if is_tx_hash(q) {
        return Ok(Query::Tx(q.to_uppercase()));
    }
    if q.starts_with("gpu1") {
        return parse_address(q).map(|a| Query::Address(a.to_string()));
    }
    let lower = q.to_lowercase();
    for (word, make) in [
        ("order", Query::Order as fn(u64) -> Query),
        ("lease", Query::Lease),
        ("block", Query::Block),
        ("height", Query::Block),
    ] {
        if let Some(rest) = lower.strip_prefix(word) {
            if let Ok(n) = rest.trim().parse::<u64>() {
                return Ok(make(n));
            }
        }
    }
    if let Ok(n) = q.replace(',', "").parse::<u64>() {
        return Ok(Query::Number(n));
    }
    Err(Problem::bad(
        format!("{q:?} is not something the explorer can look up"),
        "search for an address (gpu1…), a transaction hash (64 hex digits), a height, or `order 12` / `lease 3`",
    ))
}

/// `/search?q=…`.
pub(super) async fn search(app: &App, q: &BTreeMap<String, String>) -> Result<Reply, Problem> {
    let raw = q.get("q").map(String::as_str).unwrap_or_default();
    let query = parse(raw)?;
    let (head, snap) = app
        .snapshot(&[Module::Staking, Module::Auction, Module::Serving])
        .await?;
    let state = &snap.state;
    match query {
        Query::Tx(hash) => Ok(Reply::Redirect(format!("/txs/{hash}"))),
        Query::Address(a) => {
            let address = parse_address(&a)?;
            if state.provider(&address).is_some() {
                Ok(Reply::Redirect(format!("/providers/{a}")))
            } else {
                Ok(Reply::Redirect(format!("/accounts/{a}")))
            }
        }
        Query::Order(n) => Ok(Reply::Redirect(format!("/orders/{n}"))),
        Query::Lease(n) => Ok(Reply::Redirect(format!("/leases/{n}"))),
        Query::Block(n) => Ok(Reply::Redirect(format!("/blocks/{n}"))),
        Query::Number(n) => {
            let mut hits: Vec<(String, String)> = Vec::new();
            if n >= 1 && n <= head {
                hits.push((format!("/blocks/{n}"), format!("block {n}")));
            }
            if state.order(n).is_some() {
                hits.push((format!("/orders/{n}"), format!("order {n}")));
            }
            if state.lease(n).is_some() {
                hits.push((format!("/leases/{n}"), format!("lease {n}")));
            }
            if state.serving_order(n).is_some() {
                hits.push((format!("/serving/orders/{n}"), format!("serving order {n}")));
            }
            if state.serving_lease(n).is_some() {
                hits.push((format!("/serving/leases/{n}"), format!("serving lease {n}")));
            }
            match hits.len() {
                0 if n > head => Err(Problem::absent(
                    format!("height {n} is in the future"),
                    format!("the chain is at height {head}, and no order or lease has id {n}"),
                )),
                0 => Err(Problem::absent(
                    format!("nothing is numbered {n}"),
                    "no block, order or lease in state has that number",
                )),
                1 => Ok(Reply::Redirect(hits[0].0.clone())),
                _ => {
                    let list: String = hits
                        .iter()
                        .map(|(href, label)| {
                            format!("<li><a href=\"{href}\">{}</a></li>", esc(label))
                        })
                        .collect();
                    Ok(Page {
                        title: format!("{n} could be…"),
                        active: "",
                        json: json!({"query": raw, "hits": hits.iter().map(|(h, l)| json!({"href": h, "label": l})).collect::<Vec<_>>()}),
                        body: format!("<ul class=\"hits\" id=\"hits\">{list}</ul>"),
                    }
                    .into())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_read_as_what_they_name() {
        let hash = "ab".repeat(32);
        assert_eq!(parse(&hash).ok(), Some(Query::Tx(hash.to_uppercase())));
        assert_eq!(parse(" order 12 ").ok(), Some(Query::Order(12)));
        assert_eq!(parse("Lease 3").ok(), Some(Query::Lease(3)));
        assert_eq!(parse("height 7").ok(), Some(Query::Block(7)));
        assert_eq!(parse("#1,234").ok(), Some(Query::Number(1_234)));
        let address = gpuchain_types::Address([3; 20]).to_string();
        assert_eq!(parse(&address).ok(), Some(Query::Address(address.clone())));
    }

    #[test]
    fn what_cannot_be_looked_up_is_a_clear_bad_request() {
        for bad in [
            "",
            "   ",
            "gpu1notanaddress",
            "<script>",
            "order x",
            "ab".repeat(31).as_str(),
        ] {
            let problem = parse(bad).expect_err(bad);
            assert_eq!(
                problem.status,
                axum::http::StatusCode::BAD_REQUEST,
                "{bad:?}"
            );
            assert!(!problem.detail.is_empty());
        }
    }
}
