//! The HTTP side: routes, content negotiation (every page has a JSON twin, asked for with
//! `Accept: application/json`), error pages that say what to do, the live stream and the
//! static assets.

mod chain;
pub mod html;
mod market;
mod providers;
mod search;
mod verification;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use gpuchain_client::ChainClient;
use serde_json::{json, Value};
use tokio::sync::{watch, RwLock};

use crate::ingest::Progress;
use crate::model::ReadModel;
use crate::state::{Module, Snapshot, StateCache};

/// What every handler shares.
pub struct Inner {
    /// The read model the ingest task fills.
    pub model: Arc<RwLock<ReadModel>>,
    /// Current state, per module.
    pub cache: Arc<StateCache>,
    /// The node.
    pub client: ChainClient,
    /// The node's URL, for error messages.
    pub node: String,
    /// Each new head height.
    pub heads: watch::Receiver<u64>,
    /// The rebuild's progress.
    pub progress: Arc<RwLock<Progress>>,
    /// uPlot's files (name → bytes), read at start from the assets directory.
    pub vendor: BTreeMap<&'static str, Vec<u8>>,
}

/// The shared handle.
#[derive(Clone)]
pub struct App(pub Arc<Inner>);

/// A rendered page: its title, the navigation entry it belongs to, its data as JSON (the
/// JSON twin) and its HTML body.
pub struct Page {
    /// Title (also the `<h1>`).
    pub title: String,
    /// Navigation path it highlights.
    pub active: &'static str,
    /// The JSON twin.
    pub json: Value,
    /// The HTML inside the live region.
    pub body: String,
}

/// A request the explorer cannot answer with a page: status, what went wrong and what to do.
#[derive(Debug)]
pub struct Problem {
    /// HTTP status (400 bad input, 404 absent, 503 node unreachable).
    pub status: StatusCode,
    /// One line.
    pub title: String,
    /// What to do about it.
    pub detail: String,
}

impl Problem {
    /// 400: the input cannot be what it claims to be.
    pub fn bad(title: impl Into<String>, detail: impl Into<String>) -> Problem {
        Problem {
            status: StatusCode::BAD_REQUEST,
            title: title.into(),
            detail: detail.into(),
        }
    }

    /// 404: well-formed, but nothing on chain has it.
    pub fn absent(title: impl Into<String>, detail: impl Into<String>) -> Problem {
        Problem {
            status: StatusCode::NOT_FOUND,
            title: title.into(),
            detail: detail.into(),
        }
    }
}

/// What a handler produces.
pub enum Reply {
    /// A page.
    Page(Page),
    /// Go elsewhere (search hits).
    Redirect(String),
}

impl From<Page> for Reply {
    fn from(page: Page) -> Reply {
        Reply::Page(page)
    }
}

impl App {
    /// The head height and the state of `modules` at least that new; 503 when the node does
    /// not answer.
    pub async fn snapshot(&self, modules: &[Module]) -> Result<(u64, Snapshot), Problem> {
        let head = *self.0.heads.borrow();
        match self.0.cache.snapshot(head, modules).await {
            Ok(s) => Ok((head, s)),
            Err(e) => Err(self.unreachable(&e)),
        }
    }

    /// 503 naming the node and the error.
    pub fn unreachable(&self, e: &anyhow::Error) -> Problem {
        Problem {
            status: StatusCode::SERVICE_UNAVAILABLE,
            title: "the node does not answer".into(),
            detail: format!(
                "{} did not answer ({e:#}). Check that the node is running and that \
                 --node points at its RPC address; the explorer keeps retrying.",
                self.0.node
            ),
        }
    }

    async fn respond(&self, headers: &HeaderMap, reply: Result<Reply, Problem>) -> Response {
        let wants_json = headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.contains("application/json") && !a.contains("text/html"));
        let (chain_id, head) = {
            let m = self.0.model.read().await;
            (m.chain_id.clone(), m.height())
        };
        match reply {
            Ok(Reply::Redirect(to)) => Redirect::to(&to).into_response(),
            Ok(Reply::Page(page)) if wants_json => json_response(StatusCode::OK, &page.json),
            Ok(Reply::Page(page)) => html_response(
                StatusCode::OK,
                html::layout(&page.title, page.active, &chain_id, head, &page.body),
            ),
            Err(p) if wants_json => json_response(
                p.status,
                &json!({"error": p.title, "detail": p.detail, "status": p.status.as_u16()}),
            ),
            Err(p) => {
                let body = format!(
                    "<div class=\"problem\" id=\"problem\"><p><strong>{}</strong></p><p>{}</p>\
                     <p><a href=\"/\">Back to the overview</a> or search above.</p></div>",
                    html::esc(&p.title),
                    html::esc(&p.detail)
                );
                html_response(
                    p.status,
                    html::layout(
                        &format!("{} {}", p.status.as_u16(), status_words(p.status)),
                        "",
                        &chain_id,
                        head,
                        &body,
                    ),
                )
            }
        }
    }
}

fn status_words(status: StatusCode) -> &'static str {
    status.canonical_reason().unwrap_or("error")
}

fn json_response(status: StatusCode, value: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_string(value).unwrap_or_default(),
    )
        .into_response()
}

fn html_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::VARY, "Accept"),
        ],
        body,
    )
        .into_response()
}

/// Parses a numeric id from the URL, or says why not.
pub fn parse_id(what: &str, raw: &str) -> Result<u64, Problem> {
    raw.parse::<u64>().map_err(|_| {
        Problem::bad(
            format!("{raw:?} is not a valid {what} id"),
            format!("{what} ids are whole numbers, e.g. /{what}s/1"),
        )
    })
}

type Params = Query<BTreeMap<String, String>>;

macro_rules! page_route {
    ($name:ident, $body:expr) => {
        async fn $name(State(app): State<App>, Query(q): Params, headers: HeaderMap) -> Response {
            let reply = $body(&app, &q).await;
            app.respond(&headers, reply).await
        }
    };
    ($name:ident, path, $body:expr) => {
        async fn $name(
            State(app): State<App>,
            UrlPath(id): UrlPath<String>,
            headers: HeaderMap,
        ) -> Response {
            let reply = $body(&app, &id).await;
            app.respond(&headers, reply).await
        }
    };
}

page_route!(overview_route, chain::overview);
page_route!(providers_route, providers::list);
page_route!(provider_route, path, providers::one);
page_route!(market_route, market::overview);
page_route!(order_route, path, market::order);
page_route!(lease_route, path, market::lease);
page_route!(serving_order_route, path, market::serving_order);
page_route!(serving_lease_route, path, market::serving_lease);
page_route!(verification_route, verification::overview);
page_route!(blocks_route, chain::blocks);
page_route!(block_route, path, chain::block);
page_route!(tx_route, path, chain::tx);
page_route!(validators_route, chain::validators);
page_route!(account_route, path, chain::account);
page_route!(search_route, search::search);
page_route!(status_route, chain::status);

async fn not_found(State(app): State<App>, headers: HeaderMap) -> Response {
    let problem = Problem::absent(
        "no such page",
        "the explorer has pages for providers, the market, verification, blocks, \
         validators, accounts and transactions; use the navigation or the search box",
    );
    app.respond(&headers, Err(problem)).await
}

/// Server-sent events: `block` with the new head height, each time the explorer reads one.
async fn live(
    State(app): State<App>,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    let mut heads = app.0.heads.clone();
    heads.mark_unchanged();
    let stream = futures::stream::unfold(heads, |mut heads| async move {
        heads.changed().await.ok()?;
        let height = *heads.borrow_and_update();
        let event = Event::default().event("block").data(height.to_string());
        Some((Ok(event), heads))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

const APP_JS: &str = include_str!("../../assets/app.js");
const STYLE_CSS: &str = include_str!("../../assets/style.css");

async fn asset(State(app): State<App>, UrlPath(name): UrlPath<String>) -> Response {
    let (content_type, body): (&str, Vec<u8>) = match name.as_str() {
        "app.js" => ("text/javascript", APP_JS.as_bytes().to_vec()),
        "style.css" => ("text/css", STYLE_CSS.as_bytes().to_vec()),
        "uPlot.iife.min.js" | "uPlot.min.css" => match app.0.vendor.get(name.as_str()) {
            Some(bytes) if name.ends_with(".js") => ("text/javascript", bytes.clone()),
            Some(bytes) => ("text/css", bytes.clone()),
            None => {
                return (
                    StatusCode::NOT_FOUND,
                    "uPlot is not installed: run scripts/fetch-explorer-assets.sh and start \
                     the explorer with --assets pointing at the directory it prints",
                )
                    .into_response()
            }
        },
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    response
}

/// uPlot's two files from `dir`; absent files are left out (pages then say how to get them).
pub fn read_vendor(dir: &Path) -> BTreeMap<&'static str, Vec<u8>> {
    let mut out = BTreeMap::new();
    for name in ["uPlot.iife.min.js", "uPlot.min.css"] {
        match std::fs::read(dir.join(name)) {
            Ok(bytes) => {
                out.insert(name, bytes);
            }
            Err(e) => tracing::warn!(
                file = %dir.join(name).display(),
                error = %e,
                "chart library missing: run scripts/fetch-explorer-assets.sh"
            ),
        }
    }
    out
}

/// Every route.
pub fn router(app: App) -> Router {
    Router::new()
        .route("/", get(overview_route))
        .route("/providers", get(providers_route))
        .route("/providers/{address}", get(provider_route))
        .route("/market", get(market_route))
        .route("/orders/{id}", get(order_route))
        .route("/leases/{id}", get(lease_route))
        .route("/serving/orders/{id}", get(serving_order_route))
        .route("/serving/leases/{id}", get(serving_lease_route))
        .route("/verification", get(verification_route))
        .route("/blocks", get(blocks_route))
        .route("/blocks/{height}", get(block_route))
        .route("/txs/{hash}", get(tx_route))
        .route("/validators", get(validators_route))
        .route("/accounts/{address}", get(account_route))
        .route("/search", get(search_route))
        .route("/status", get(status_route))
        .route("/live", get(live))
        .route("/assets/{name}", get(asset))
        .fallback(not_found)
        .with_state(app)
}
