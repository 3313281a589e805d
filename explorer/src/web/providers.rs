//! Providers: the table people choose GPUs from (hardware, bond, reputation, record, asking
//! price; filters and sorting by each) and one provider's page with its history.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use gpuchain_auction::AuctionRead;
use gpuchain_reputation::ReputationRead;
use gpuchain_serving::ServingRead;
use gpuchain_slashing::SlashingRead;
use gpuchain_staking::{Provider, ProviderClass, StakingRead};
use gpuchain_types::Address;
use serde::Serialize;
use serde_json::json;

use super::html::{self, esc};
use super::{App, Page, Problem, Reply};
use crate::model::{AskingPrice, ProviderActivity};
use crate::state::Module;

/// One row of the providers table.
#[derive(Clone, Debug, Serialize)]
pub(super) struct ProviderRow {
    /// Operator address.
    pub(super) operator: String,
    /// `gpu` or `cpu`.
    pub(super) class: &'static str,
    /// GPU model (empty for CPU providers).
    pub(super) gpu_model: String,
    /// MiB per GPU.
    pub(super) vram_mib: u64,
    /// GPUs.
    pub(super) gpu_count: u32,
    /// Region label.
    pub(super) region: String,
    /// Bond, ugpu.
    pub(super) bonded: u128,
    /// Reputation now, ppm.
    pub(super) reputation_ppm: u32,
    /// Results accepted and paid (reputation record).
    pub(super) jobs_served: u64,
    /// Results proven wrong (reputation record).
    pub(super) faults: u64,
    /// Slashes on record.
    pub(super) slashes: usize,
    /// Share of closed batch leases delivered, ppm.
    pub(super) uptime_ppm: Option<u64>,
    /// Height of its latest transaction.
    pub(super) last_seen: Option<u64>,
    /// Its latest bid.
    pub(super) asking: Option<AskingPrice>,
    /// Jailed at the head height.
    pub(super) jailed: bool,
}

fn class_name(class: ProviderClass) -> &'static str {
    match class {
        ProviderClass::Gpu => "gpu",
        ProviderClass::Cpu => "cpu",
    }
}

fn row(
    state: &crate::state::View,
    head: u64,
    provider: &Provider,
    activity: ProviderActivity,
) -> ProviderRow {
    let reputation = state.reputation(&provider.operator);
    ProviderRow {
        operator: provider.operator.to_string(),
        class: class_name(provider.attrs.class),
        gpu_model: provider.attrs.gpu_model.clone(),
        vram_mib: provider.attrs.vram_mib,
        gpu_count: provider.attrs.gpu_count,
        region: provider.attrs.region.clone(),
        bonded: provider.bonded,
        reputation_ppm: state.score(&provider.operator, head),
        jobs_served: reputation.accepted,
        faults: reputation.faults,
        slashes: state.slash_records_of(&provider.operator).len(),
        uptime_ppm: activity.uptime_ppm(),
        last_seen: activity.last_seen,
        asking: activity.last_bid,
        jailed: provider.is_jailed(head),
    }
}

/// The columns one can sort by: (query key, header label).
const COLUMNS: [(&str, &str); 13] = [
    ("operator", "Provider"),
    ("gpu_model", "GPU model"),
    ("vram", "VRAM"),
    ("gpus", "GPUs"),
    ("region", "Region"),
    ("class", "Class"),
    ("bond", "Bond"),
    ("reputation", "Reputation"),
    ("jobs", "Jobs served"),
    ("faults", "Faults"),
    ("uptime", "Uptime"),
    ("last_seen", "Last seen"),
    ("price", "Asking price"),
];

fn compare(a: &ProviderRow, b: &ProviderRow, key: &str) -> Ordering {
    match key {
        "gpu_model" => a.gpu_model.cmp(&b.gpu_model),
        "vram" => a.vram_mib.cmp(&b.vram_mib),
        "gpus" => a.gpu_count.cmp(&b.gpu_count),
        "region" => a.region.cmp(&b.region),
        "class" => a.class.cmp(b.class),
        "bond" => a.bonded.cmp(&b.bonded),
        "reputation" => a.reputation_ppm.cmp(&b.reputation_ppm),
        "jobs" => a.jobs_served.cmp(&b.jobs_served),
        "faults" => a.faults.cmp(&b.faults),
        "uptime" => a.uptime_ppm.cmp(&b.uptime_ppm),
        "last_seen" => a.last_seen.cmp(&b.last_seen),
        // Providers without a bid sort after those with one, whichever the direction.
        "price" => match (&a.asking, &b.asking) {
            (Some(x), Some(y)) => x.price.cmp(&y.price),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        },
        _ => a.operator.cmp(&b.operator),
    }
}

fn number(q: &BTreeMap<String, String>, key: &str) -> Result<Option<u64>, Problem> {
    match q.get(key).map(|v| v.trim()).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|_| {
            Problem::bad(
                format!("{key} must be a whole number, not {v:?}"),
                "remove the filter or give a number, e.g. min_vram=24576 (MiB)",
            )
        }),
    }
}

fn text<'a>(q: &'a BTreeMap<String, String>, key: &str) -> Option<&'a str> {
    q.get(key).map(|v| v.trim()).filter(|v| !v.is_empty())
}

/// `/providers`.
pub(super) async fn list(app: &App, q: &BTreeMap<String, String>) -> Result<Reply, Problem> {
    let (head, snap) = app
        .snapshot(&[Module::Staking, Module::Reputation, Module::Slashing])
        .await?;
    let min_vram = number(q, "min_vram")?;
    let gpu_model = text(q, "gpu_model");
    let region = text(q, "region");
    let class = text(q, "class");
    if let Some(c) = class {
        if c != "gpu" && c != "cpu" {
            return Err(Problem::bad(
                format!("class must be gpu or cpu, not {c:?}"),
                "pick a class from the filter form or remove it",
            ));
        }
    }
    let sort = text(q, "sort").unwrap_or("operator");
    if !COLUMNS.iter().any(|(k, _)| *k == sort) {
        return Err(Problem::bad(
            format!("cannot sort by {sort:?}"),
            format!("sort by one of: {}", COLUMNS.map(|(k, _)| k).join(", ")),
        ));
    }
    let descending = text(q, "dir") == Some("desc");
    let page =
        html::page_number(q).map_err(|e| Problem::bad(e, "remove page= or give a page number"))?;
    let all = snap.state.providers();
    let total = all.len();
    let mut rows: Vec<ProviderRow> = {
        let model = app.0.model.read().await;
        all.iter()
            .filter(|p| {
                let a = &p.attrs;
                gpu_model.is_none_or(|m| a.gpu_model.eq_ignore_ascii_case(m))
                    && min_vram.is_none_or(|v| a.vram_mib >= v)
                    && region.is_none_or(|r| a.region == r)
                    && class.is_none_or(|c| class_name(a.class) == c)
            })
            .map(|p| {
                row(
                    &snap.state,
                    head,
                    p,
                    model.activity(&p.operator.to_string()),
                )
            })
            .collect()
    };
    rows.sort_by(|a, b| {
        let o = compare(a, b, sort);
        let o = if descending && !(sort == "price" && (a.asking.is_none() || b.asking.is_none())) {
            o.reverse()
        } else {
            o
        };
        o.then_with(|| a.operator.cmp(&b.operator))
    });

    let mut filters = String::from("<form class=\"filters\" method=\"get\" action=\"/providers\">");
    let models: std::collections::BTreeSet<&str> = all
        .iter()
        .map(|p| p.attrs.gpu_model.as_str())
        .filter(|m| !m.is_empty())
        .collect();
    let regions: std::collections::BTreeSet<&str> =
        all.iter().map(|p| p.attrs.region.as_str()).collect();
    let select = |name: &str,
                  label: &str,
                  options: &mut dyn Iterator<Item = &str>,
                  current: Option<&str>| {
        let mut s =
            format!("<label>{label} <select name=\"{name}\"><option value=\"\">any</option>");
        for o in options {
            let sel = if current == Some(o) { " selected" } else { "" };
            s.push_str(&format!("<option{sel}>{}</option>", esc(o)));
        }
        s.push_str("</select></label>");
        s
    };
    filters.push_str(&select(
        "gpu_model",
        "GPU model",
        &mut models.iter().copied(),
        gpu_model,
    ));
    filters.push_str(&format!(
        "<label>min VRAM (MiB) <input name=\"min_vram\" inputmode=\"numeric\" size=\"7\" value=\"{}\"></label>",
        min_vram.map(|v| v.to_string()).unwrap_or_default()
    ));
    filters.push_str(&select(
        "region",
        "Region",
        &mut regions.iter().copied(),
        region,
    ));
    filters.push_str(&select(
        "class",
        "Class",
        &mut ["gpu", "cpu"].into_iter(),
        class,
    ));
    filters.push_str(&format!(
        "<input type=\"hidden\" name=\"sort\" value=\"{}\"><input type=\"hidden\" name=\"dir\" value=\"{}\">\
         <button type=\"submit\">Filter</button> <a href=\"/providers\">clear</a></form>",
        esc(sort),
        if descending { "desc" } else { "asc" }
    ));

    let keep = |k: &str| {
        text(q, k)
            .map(|v| format!("&{k}={}", html::query_value(v)))
            .unwrap_or_default()
    };
    let kept = format!(
        "{}{}{}{}",
        keep("gpu_model"),
        keep("min_vram"),
        keep("region"),
        keep("class")
    );
    let headers: Vec<String> = COLUMNS
        .iter()
        .map(|(key, label)| {
            let (dir, arrow) = if *key == sort {
                if descending {
                    ("asc", " ▼")
                } else {
                    ("desc", " ▲")
                }
            } else {
                ("asc", "")
            };
            format!(
                "<a class=\"sort\" data-sort=\"{key}\" href=\"{}\">{label}{arrow}</a>",
                esc(&format!("/providers?sort={key}&dir={dir}{kept}"))
            )
        })
        .collect();
    let shown = html::page_range(page, rows.len());
    let cells: Vec<Vec<String>> = rows[shown.clone()]
        .iter()
        .map(|r| {
            vec![
                html::addr_at("/providers", &r.operator)
                    + if r.jailed {
                        " <span class=\"tag bad\">jailed</span>"
                    } else {
                        ""
                    },
                if r.gpu_model.is_empty() {
                    "—".into()
                } else {
                    esc(&r.gpu_model)
                },
                html::mib(r.vram_mib),
                r.gpu_count.to_string(),
                esc(&r.region),
                r.class.to_string(),
                html::gpu(r.bonded),
                html::percent(u64::from(r.reputation_ppm)),
                r.jobs_served.to_string(),
                if r.faults > 0 || r.slashes > 0 {
                    format!(
                        "<span class=\"bad\">{} ({} slashed)</span>",
                        r.faults, r.slashes
                    )
                } else {
                    "0".into()
                },
                r.uptime_ppm
                    .map(html::percent)
                    .unwrap_or_else(|| "—".into()),
                r.last_seen
                    .map(|h| format!("{} ({})", html::height_link(h), html::blocks_ago(h, head)))
                    .unwrap_or_else(|| "—".into()),
                r.asking
                    .as_ref()
                    .map(|a| {
                        let order = if a.market == "serving" {
                            format!(
                                "<a href=\"/serving/orders/{0}\">serving order {0}</a>",
                                a.order_id
                            )
                        } else {
                            format!("<a href=\"/orders/{0}\">order {0}</a>", a.order_id)
                        };
                        format!(
                            "<span class=\"price\" data-ugpu=\"{}\">{}</span> on {order}",
                            a.price,
                            html::gpu(a.price)
                        )
                    })
                    .unwrap_or_else(|| "—".into()),
            ]
        })
        .collect();
    let empty = if total == 0 {
        "No provider has registered yet. A provider joins with `gpuchain-provider init` and `gpuchain-provider register` (docs/provider.md)."
    } else {
        "No provider matches these filters; clear them to see all."
    };
    let pager = html::pager("providers-pages", page, rows.len(), |n| {
        format!(
            "/providers?sort={sort}&dir={}{kept}&page={n}",
            if descending { "desc" } else { "asc" }
        )
    });
    let body = format!(
        "<p class=\"lead\">{} of {} registered providers. Uptime is the share of a provider's closed \
         batch leases it delivered; the asking price is its latest bid (per replica, or per million \
         tokens on serving orders).</p>{filters}{}",
        rows.len(),
        total,
        html::table("providers", &headers, &cells, empty) + &pager
    );
    Ok(Page {
        title: "Providers".into(),
        active: "/providers",
        json: json!({
            "height": head, "total": total, "matching": rows.len(), "page": page,
            "per_page": html::PER_PAGE, "providers": &rows[shown],
        }),
        body,
    }
    .into())
}

/// Parses a `gpu1…` address from the URL, or says why not.
pub(super) fn parse_address(raw: &str) -> Result<Address, Problem> {
    raw.parse::<Address>().map_err(|e| {
        Problem::bad(
            format!("{raw:?} is not an address"),
            format!(
                "addresses are bech32 strings that start with gpu1 ({e}); copy one with the copy button beside it"
            ),
        )
    })
}

/// `/providers/{address}`.
pub(super) async fn one(app: &App, raw: &str) -> Result<Reply, Problem> {
    let address = parse_address(raw)?;
    let (head, snap) = app
        .snapshot(&[
            Module::Staking,
            Module::Reputation,
            Module::Slashing,
            Module::Auction,
            Module::Serving,
        ])
        .await?;
    let state = &snap.state;
    let Some(provider) = state.provider(&address) else {
        return Err(Problem::absent(
            format!("{address} is not a registered provider"),
            format!(
                "it may have deregistered, or never registered; its account page /accounts/{address} shows what it did"
            ),
        ));
    };
    let (activity, history) = {
        let model = app.0.model.read().await;
        (
            model.activity(&address.to_string()),
            model.history(&format!("account/{address}")),
        )
    };
    let r = row(state, head, &provider, activity.clone());
    let reputation = state.reputation_history(&address);
    let leases = state.leases_of_provider(&address);
    let serving = state.serving_leases_of(&address);
    let slashes = state.slash_records_of(&address);
    let a = &provider.attrs;

    let mut body = html::facts(&[
        ("Operator", html::addr(&address)),
        ("Class", r.class.to_string()),
        (
            "GPU",
            if a.gpu_model.is_empty() {
                "none (CPU provider)".into()
            } else {
                format!(
                    "{} × {} · {} · compute capability {}.{} · driver {} · CUDA {}.{}",
                    a.gpu_count,
                    esc(&a.gpu_model),
                    html::mib(a.vram_mib),
                    a.compute_capability / 10,
                    a.compute_capability % 10,
                    esc(&a.driver_version),
                    a.cuda_version / 1000,
                    (a.cuda_version % 1000) / 10
                )
            },
        ),
        ("Region", esc(&a.region)),
        ("Endpoint", esc(&a.endpoint_url)),
        ("Bond", html::gpu(provider.bonded)),
        ("Reputation", html::percent(u64::from(r.reputation_ppm))),
        ("Jobs served", r.jobs_served.to_string()),
        (
            "Faults",
            format!("{} ({} slashes on record)", r.faults, r.slashes),
        ),
        (
            "Uptime",
            r.uptime_ppm
                .map(html::percent)
                .unwrap_or_else(|| "no closed lease yet".into()),
        ),
        ("Earned", html::gpu(activity.earned)),
        (
            "Registered",
            if provider.registered_height == 0 {
                "at genesis".into()
            } else {
                html::height_link(provider.registered_height)
            },
        ),
        (
            "Last seen",
            r.last_seen
                .map(|h| format!("{} ({})", html::height_link(h), html::blocks_ago(h, head)))
                .unwrap_or_else(|| "never signed a transaction".into()),
        ),
        (
            "Jailed",
            if provider.is_jailed(head) {
                format!(
                    "<span class=\"bad\">until height {}</span>",
                    provider.jailed_until
                )
            } else {
                "no".into()
            },
        ),
    ]);

    body.push_str("<h2 id=\"slashes\">Slashes</h2>");
    let slash_rows: Vec<Vec<String>> = slashes
        .iter()
        .map(|s| {
            vec![
                html::height_link(s.height),
                format!("<span class=\"bad\">{}</span>", esc(s.reason.name())),
                html::gpu(s.outcome.slashed),
                html::gpu(s.outcome.to_client),
                html::gpu(s.outcome.to_prover),
                html::gpu(s.outcome.burned),
                if s.jailed_until > head {
                    format!("until {}", s.jailed_until)
                } else {
                    "—".into()
                },
            ]
        })
        .collect();
    body.push_str(&html::table(
        "slash-records",
        &[
            "Height",
            "Reason",
            "Slashed",
            "To client",
            "To prover",
            "Burned",
            "Jailed",
        ]
        .map(String::from),
        &slash_rows,
        "No slash: every result this provider revealed that was checked was right.",
    ));

    body.push_str("<h2>Reputation over time</h2>");
    let points: Vec<(u64, f64)> = reputation
        .iter()
        .map(|h| (h.height, f64::from(h.after_ppm) / 10_000.0))
        .collect();
    body.push_str(&html::chart(
        "reputation-chart",
        "height",
        "reputation %",
        &[("reputation".into(), points)],
    ));
    let rep_rows: Vec<Vec<String>> = reputation
        .iter()
        .rev()
        .take(50)
        .map(|h| {
            vec![
                html::height_link(h.height),
                esc(h.outcome.name()),
                html::percent(u64::from(h.before_ppm)),
                html::percent(u64::from(h.after_ppm)),
            ]
        })
        .collect();
    body.push_str(&html::table("reputation", &["Height", "Outcome", "Before", "After"].map(String::from), &rep_rows, "No reputation change yet: it moves when a result is accepted, a challenge passed or a fault proven."));

    body.push_str("<h2>Leases</h2>");
    let mut lease_rows: Vec<Vec<String>> = leases
        .iter()
        .rev()
        .take(100)
        .map(|l| {
            vec![
                format!("<a href=\"/leases/{0}\">{0}</a>", l.id),
                format!("<a href=\"/orders/{0}\">{0}</a>", l.order_id),
                super::market::lease_state(l.state.name()),
                html::gpu(l.price),
                html::height_link(l.created_height),
            ]
        })
        .collect();
    lease_rows.extend(serving.iter().rev().take(50).map(|l| {
        vec![
            format!("<a href=\"/serving/leases/{0}\">serving {0}</a>", l.id),
            format!(
                "<a href=\"/serving/orders/{0}\">serving {0}</a>",
                l.order_id
            ),
            super::market::lease_state(super::market::serving_lease_state(l.state)),
            format!("{} / M units", html::gpu(l.price)),
            html::height_link(l.start_height),
        ]
    }));
    body.push_str(&html::table(
        "leases",
        &["Lease", "Order", "State", "Price", "Created"].map(String::from),
        &lease_rows,
        "No lease in state: it has not won an order yet, or its closed leases were retired.",
    ));

    body.push_str("<h2>History</h2>");
    body.push_str(&super::chain::event_table(
        "history",
        &history,
        100,
        "No event names this provider yet.",
    ));

    Ok(Page {
        title: format!("Provider {}", short(&address.to_string())),
        active: "/providers",
        json: json!({
            "height": head,
            "provider": provider,
            "summary": r,
            "activity": activity,
            "reputation_history": reputation,
            "slashes": slashes,
            "leases": leases,
            "serving_leases": serving,
            "history": history,
        }),
        body,
    }
    .into())
}

/// `gpu1abcd…wxyz`.
pub(super) fn short(address: &str) -> String {
    if address.len() > 16 {
        format!("{}…{}", &address[..9], &address[address.len() - 5..])
    } else {
        address.to_string()
    }
}
