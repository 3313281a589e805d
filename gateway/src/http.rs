//! The gateway's HTTP side: OpenAI's routes, errors in OpenAI's shape, and the answers
//! written from what the drivers pass on.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use futures::{FutureExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::attempt::{first_success, send, Failure, UpstreamAnswer};
use crate::generation::{drive, Chunker, Generation, Out, Shape};
use crate::pool::{InFlight, Pool, Route};
use crate::stats::Stats;

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct Gateway {
    pub(crate) pool: Arc<Pool>,
    pub(crate) stats: Arc<Stats>,
    pub(crate) max_attempts: usize,
    pub(crate) hedge_after: Duration,
}

pub(crate) fn router(g: Gateway) -> Router {
    Router::new()
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .route("/v1/embeddings", post(embeddings))
        .route("/metrics", get(metrics))
        .with_state(g)
}

fn json_answer(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// OpenAI's error shape.
pub(crate) fn error(status: StatusCode, kind: &str, message: impl Into<String>) -> Response {
    let body = json!({"error": {"message": message.into(), "type": kind, "code": Value::Null}});
    json_answer(status, &body)
}

pub(crate) fn bad_request(message: impl Into<String>) -> Response {
    error(StatusCode::BAD_REQUEST, "invalid_request_error", message)
}

/// The answer when no provider can be routed to.
pub(crate) fn route_failure(route: &Route, model: &str) -> Response {
    match route {
        Route::UnknownModel => error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!("no provider serves model `{model}`"),
        ),
        _ => {
            let mut r = error(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "no provider is answering; retry shortly",
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            r
        }
    }
}

/// The answer when every provider tried refused or failed.
pub(crate) fn failure_response(f: Failure) -> Response {
    match f {
        Failure::Answer(UpstreamAnswer {
            status,
            retry_after,
            body,
        }) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
            let mut r =
                (status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
            if let Some(secs) = retry_after {
                if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                    r.headers_mut().insert(header::RETRY_AFTER, v);
                }
            }
            r
        }
        Failure::NoneAnswered(why) => error(
            StatusCode::BAD_GATEWAY,
            "upstream_error",
            format!("no provider could answer ({why}); retry shortly"),
        ),
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

async fn models(State(g): State<Gateway>) -> Response {
    let data: Vec<Value> = g
        .pool
        .models()
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "gpuchain"}))
        .collect();
    json_answer(StatusCode::OK, &json!({"object": "list", "data": data}))
}

async fn metrics(State(g): State<Gateway>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        g.stats.render(&g.pool),
    )
        .into_response()
}

async fn chat(State(g): State<Gateway>, headers: HeaderMap, body: Bytes) -> Response {
    Stats::add(&g.stats.chat_requests, 1);
    let answer = generation(&g, &headers, &body, Shape::Chat).await;
    count(&g, answer)
}

async fn completions(State(g): State<Gateway>, headers: HeaderMap, body: Bytes) -> Response {
    Stats::add(&g.stats.completion_requests, 1);
    let answer = generation(&g, &headers, &body, Shape::Text).await;
    count(&g, answer)
}

/// Counts an answer by its status (a streamed answer counts as answered when it starts;
/// one that breaks off later is counted by the stream).
fn count(g: &Gateway, answer: Response) -> Response {
    let counter = match answer.status() {
        s if s.is_success() => &g.stats.answered,
        s if s.is_client_error() && s != StatusCode::TOO_MANY_REQUESTS => &g.stats.refused,
        _ => &g.stats.failed,
    };
    Stats::add(counter, 1);
    answer
}

async fn generation(g: &Gateway, headers: &HeaderMap, body: &[u8], shape: Shape) -> Response {
    let arrived = Instant::now();
    let req = match Generation::parse(body, shape, headers, g.hedge_after) {
        Ok(r) => r,
        Err(why) => return bad_request(why),
    };
    let (tx, mut rx) = mpsc::channel(64);
    tokio::spawn(drive(g.clone(), req.clone(), tx));
    let first = match rx.recv().await {
        Some(Out::Refused(answer)) => return answer,
        Some(out) => out,
        None => return error(StatusCode::BAD_GATEWAY, "upstream_error", "no answer"),
    };
    if matches!(first, Out::Text(_)) {
        g.stats.first_token(arrived.elapsed());
    }
    let id_prefix = match shape {
        Shape::Chat => "chatcmpl",
        Shape::Text => "cmpl",
    };
    let mut chunker = Chunker {
        id: format!(
            "{id_prefix}-gw{:016x}",
            rand_core::RngCore::next_u64(&mut rand_core::OsRng)
        ),
        created: now(),
        model: req.model.clone(),
        shape,
        include_usage: req.include_usage,
        first: true,
    };
    let outs =
        futures::stream::iter([first]).chain(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)));
    if req.stream {
        let stats = g.stats.clone();
        let events = outs.filter_map(move |out| {
            if matches!(out, Out::Broken(_)) {
                Stats::add(&stats.failed, 1);
            }
            let data = chunker.data(out);
            async move { data.map(|d| Ok::<_, Infallible>(Event::default().data(d))) }
        });
        return Sse::new(events).into_response();
    }
    let (mut text, mut finish, mut usage) = (String::new(), None, None);
    let mut outs = outs.boxed();
    while let Some(out) = outs.next().await {
        match out {
            Out::Text(t) => text.push_str(&t),
            Out::Finish(f) => finish = Some(f),
            Out::Usage(u) => usage = Some(u),
            Out::Broken(why) => {
                return error(StatusCode::BAD_GATEWAY, "upstream_error", why);
            }
            Out::Refused(answer) => return answer,
            Out::Done => break,
        }
    }
    let finish = finish.unwrap_or_else(|| "stop".to_string());
    json_answer(StatusCode::OK, &chunker.whole(&text, &finish, usage))
}

async fn embeddings(State(g): State<Gateway>, headers: HeaderMap, body: Bytes) -> Response {
    Stats::add(&g.stats.embedding_requests, 1);
    let answer = embed(&g, &headers, body).await;
    count(&g, answer)
}

/// Embeddings are forwarded as they are, to the best provider of the model, retried
/// elsewhere and hedged like generation.
/// Keeps the receipt of an embeddings answer on a lease when it hashes what arrived and
/// charges one unit per input.
fn keep_embedding_receipt(
    pool: &crate::pool::Pool,
    u: &crate::pool::Upstream,
    receipt: Option<String>,
    request: &[u8],
    response: &[u8],
    inputs: u64,
) {
    let (Some(lease), Some(leases)) = (u.spec.lease, &pool.leases) else {
        return;
    };
    let kept = receipt
        .ok_or_else(|| "the answer carries no receipt".to_string())
        .and_then(|r| serde_json::from_str(&r).map_err(|e| format!("not a receipt: {e}")))
        .and_then(|r| leases.keep(lease, r, request, response, inputs));
    if let Err(why) = kept {
        tracing::warn!(upstream = %u.spec.url, lease, %why, "receipt refused: that answer is not acknowledged");
    }
}

async fn embed(g: &Gateway, headers: &HeaderMap, body: Bytes) -> Response {
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return bad_request(format!("malformed request: {e}")),
    };
    let Some(model) = request.get("model").and_then(Value::as_str) else {
        return bad_request("`model` is missing");
    };
    let region = headers
        .get("x-gpuchain-region")
        .and_then(|v| v.to_str().ok());
    let candidates = match g.pool.route(model, region) {
        Route::To(c) => c,
        other => return route_failure(&other, model),
    };
    let inputs = match request.get("input") {
        Some(Value::Array(items)) => items.len() as u64,
        _ => 1,
    };
    let body = Arc::new(body.to_vec());
    let answered = first_success(&candidates, g.max_attempts, g.hedge_after, &g.stats, |u| {
        let (pool, body) = (g.pool.clone(), body.clone());
        async move {
            let _in_flight = InFlight::start(&u);
            let started = Instant::now();
            let response = send(&pool, &u, "/v1/embeddings", &body).await?;
            let receipt = response
                .headers()
                .get("x-gpuchain-receipt")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            match response.bytes().await {
                Ok(bytes) => {
                    u.answered(started.elapsed());
                    keep_embedding_receipt(&pool, &u, receipt, &body, &bytes, inputs);
                    Ok(bytes)
                }
                Err(e) => {
                    let why = format!("the answer broke off: {e}");
                    u.failed(&why);
                    Err(crate::attempt::Refusal::Elsewhere(why, None))
                }
            }
        }
        .boxed()
    })
    .await;
    match answered {
        Ok(bytes) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            bytes,
        )
            .into_response(),
        Err(f) => failure_response(f),
    }
}
