//! The HTTP side: OpenAI's request and response shapes, errors as OpenAI's
//! `{"error": {"message", "type", "code"}}`, streaming as server-sent events.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};
use std::sync::atomic::AtomicU64;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use super::batch::{Batches, Piece, Request};
use super::cache::{ModelCache, Unavailable};
use super::ledger::{lease_of, Admitted, Ledger};
use super::stats::Stats;
use super::{EmbedModel, Model};
use gpuchain_compute::serving::AnswerRecord;
use gpuchain_compute::serving::{ChatRequest, Completion, CompletionRequest, Prepared};

#[derive(Clone)]
pub(super) struct Served {
    pub(super) models: Arc<ModelCache>,
    pub(super) embedder: Option<Arc<EmbedModel>>,
    pub(super) slots: Arc<Semaphore>,
    pub(super) max_concurrent: usize,
    pub(super) stats: Arc<Stats>,
    pub(super) ledger: Option<Arc<Ledger>>,
    pub(super) batches: Arc<Batches>,
}

/// A request answered on a lease: where its receipt goes, and what it hashes.
pub(super) struct OnLease {
    ledger: Arc<Ledger>,
    admitted: Admitted,
    request: Bytes,
}

/// Most bytes one generated token adds to an answer record: its id in the token list and its
/// text, JSON-escaped at worst.
pub(super) const RECORD_BYTES_PER_TOKEN: usize = 32;

/// Most bytes one embedding adds to an embeddings answer (384 floats as JSON).
pub(super) const ANSWER_BYTES_PER_EMBEDDING: usize = 9_000;

impl OnLease {
    /// The 413 refusal when an answer of up to `answer_bytes` could not be revealed with
    /// this request; `None` when it could.
    pub(super) fn too_large(&self, answer_bytes: usize) -> Option<Response> {
        self.ledger
            .fits(self.request.len(), answer_bytes)
            .err()
            .map(|why| error(StatusCode::PAYLOAD_TOO_LARGE, "invalid_request_error", why))
    }

    /// Writes the receipt of `response` for `units`; the receipt as JSON.
    pub(super) fn receipt(&self, response: &[u8], units: u64) -> Result<Value, String> {
        let r = self
            .ledger
            .record(&self.admitted, &self.request, response, units)?;
        serde_json::to_value(r).map_err(|e| e.to_string())
    }
}

/// The model a request names, read before the request is admitted on a lease.
#[derive(serde::Deserialize)]
struct NamedModel {
    model: String,
}

/// Admits a request for a `kind` model that names a lease (`None` when it names none); the
/// error is the answer.
pub(super) async fn on_lease(
    s: &Served,
    headers: &HeaderMap,
    body: &Bytes,
    kind: gpuchain_serving::ServingKind,
) -> Result<Option<OnLease>, Response> {
    if lease_of(headers).is_none() {
        return Ok(None);
    }
    let Ok(named) = serde_json::from_slice::<NamedModel>(body) else {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "malformed request: a JSON object naming its `model`",
        ));
    };
    let Some(ledger) = s.ledger.clone() else {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "this endpoint serves no chain leases (start it with --receipts, --node and --operator)",
        ));
    };
    match ledger.admit(headers, body, &named.model, kind).await {
        Ok(admitted) => Ok(Some(OnLease {
            ledger,
            admitted,
            request: body.clone(),
        })),
        Err(why) => Err(error(StatusCode::FORBIDDEN, "permission_error", why)),
    }
}

pub(super) fn router(
    cache: Arc<ModelCache>,
    embedder: Option<Arc<EmbedModel>>,
    max_concurrent: usize,
    ledger: Option<Arc<Ledger>>,
    dishonest: bool,
) -> Router {
    Router::new()
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/completions", post(completions))
        .route("/v1/embeddings", post(super::embeddings::embeddings))
        .route("/v1/gpuchain/acks", post(acks))
        .route("/metrics", get(metrics))
        .with_state({
            let stats = Arc::<Stats>::default();
            Served {
                models: cache,
                embedder,
                slots: Arc::new(Semaphore::new(max_concurrent)),
                max_concurrent,
                batches: Arc::new(Batches::new(stats.clone(), dishonest)),
                stats,
                ledger,
            }
        })
}

/// A 200 answer with a JSON body.
pub(super) fn json_answer(body: &Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

pub(super) fn error(status: StatusCode, kind: &str, message: impl Into<String>) -> Response {
    let body = json!({"error": {"message": message.into(), "type": kind, "code": Value::Null}});
    let mut answer = json_answer(&body);
    *answer.status_mut() = status;
    answer
}

/// The 429 answer (with `Retry-After`) when every slot is busy.
pub(super) fn busy() -> Response {
    let mut r = error(
        StatusCode::TOO_MANY_REQUESTS,
        "overloaded",
        "all slots are busy; retry shortly or elsewhere",
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    r
}

impl Served {
    /// One of the slots, if one is free (else answer [`busy`]).
    pub(super) fn take_slot(&self) -> Option<OwnedSemaphorePermit> {
        self.slots.clone().try_acquire_owned().ok()
    }

    /// Counts `answer` by its outcome: busy, refused as bad, or served (`served`).
    pub(super) fn count(&self, answer: Response, served: &AtomicU64) -> Response {
        let counter = match answer.status() {
            StatusCode::TOO_MANY_REQUESTS => &self.stats.rejected_busy,
            status if status.is_client_error() => &self.stats.rejected_bad,
            _ => served,
        };
        Stats::add(counter, 1);
        answer
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

async fn models(State(s): State<Served>) -> Response {
    let entry = |id: &str| json!({"id": id, "object": "model", "created": 0, "owned_by": "gpuchain-provider"});
    let mut data: Vec<Value> = s.models.names().map(entry).collect();
    data.extend(s.embedder.as_ref().map(|e| entry(&e.name)));
    json_answer(&json!({"object": "list", "data": data}))
}

async fn metrics(State(s): State<Served>) -> Response {
    let busy = s.max_concurrent - s.slots.available_permits();
    let mut text = s
        .stats
        .render(busy, s.max_concurrent, s.models.loaded_bytes());
    s.models.render(&mut text);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

async fn chat_completions(State(s): State<Served>, headers: HeaderMap, body: Bytes) -> Response {
    let arrived = Instant::now();
    let answer = completion::<ChatRequest>(&s, &headers, body, Shape::Chat, arrived).await;
    s.count(answer, &s.stats.chat_requests)
}

async fn completions(State(s): State<Served>, headers: HeaderMap, body: Bytes) -> Response {
    let arrived = Instant::now();
    let answer = completion::<CompletionRequest>(&s, &headers, body, Shape::Text, arrived).await;
    s.count(answer, &s.stats.chat_requests)
}

/// A chat or text completion request: parsed, its model checked, prepared and answered in
/// `shape`; a refusal is OpenAI's error answer.
async fn completion<R: Completion>(
    s: &Served,
    headers: &HeaderMap,
    body: Bytes,
    shape: Shape,
    arrived: Instant,
) -> Response {
    let lease = match on_lease(s, headers, &body, gpuchain_serving::ServingKind::Generation).await {
        Ok(l) => l,
        Err(refused) => return refused,
    };
    let req: R = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                format!("malformed request: {e}"),
            )
        }
    };
    let model = match s.models.get(req.model()).await {
        Ok(m) => m,
        Err(Unavailable::Unknown) => {
            let offered: Vec<&str> = s.models.names().collect();
            return error(
                StatusCode::NOT_FOUND,
                "invalid_request_error",
                format!(
                    "model `{}` is not served here ({} is)",
                    req.model(),
                    offered.join(", ")
                ),
            );
        }
        Err(Unavailable::NoRoom) => return busy(),
        Err(Unavailable::Failed(why)) => {
            return error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", why)
        }
    };
    let fallback_seed = rand_core::RngCore::next_u64(&mut rand_core::OsRng);
    match req.prepare(&model, fallback_seed) {
        Ok(p) => {
            if let Some(on) = &lease {
                let most = p.max_tokens.saturating_mul(RECORD_BYTES_PER_TOKEN) + 64;
                if let Some(refused) = on.too_large(most) {
                    return refused;
                }
            }
            let stream = req.stream().then_some(req.include_usage());
            answer(s, model, p, stream, shape, arrived, lease).await
        }
        Err(e) => error(StatusCode::BAD_REQUEST, "invalid_request_error", e),
    }
}

/// Which OpenAI response shapes an answer takes.
#[derive(Clone, Copy)]
enum Shape {
    /// `chat.completion` / `chat.completion.chunk`: text in `message` / `delta`.
    Chat,
    /// `text_completion`: text in `text`.
    Text,
}

impl Shape {
    fn id_prefix(self) -> &'static str {
        match self {
            Shape::Chat => "chatcmpl",
            Shape::Text => "cmpl",
        }
    }

    /// One streamed choice: `text` (the first piece of a chat answer names the role).
    fn streamed(self, text: Option<&str>, first: bool, finish: Value) -> Value {
        match self {
            Shape::Chat => {
                let delta = match text {
                    Some(t) if first => json!({"role": "assistant", "content": t}),
                    Some(t) => json!({"content": t}),
                    None => json!({}),
                };
                json!({"index": 0, "delta": delta, "finish_reason": finish})
            }
            Shape::Text => json!({"index": 0, "text": text.unwrap_or(""), "logprobs": null,
                                  "finish_reason": finish}),
        }
    }

    fn whole(self, text: &str, finish: &str) -> Value {
        match self {
            Shape::Chat => json!({"index": 0, "message": {"role": "assistant", "content": text},
                                  "finish_reason": finish}),
            Shape::Text => {
                json!({"index": 0, "text": text, "logprobs": null, "finish_reason": finish})
            }
        }
    }

    fn object(self, streamed: bool) -> &'static str {
        match (self, streamed) {
            (Shape::Chat, true) => "chat.completion.chunk",
            (Shape::Chat, false) => "chat.completion",
            (Shape::Text, _) => "text_completion",
        }
    }
}

/// The event that ends a streamed answer on a lease: its receipt, and the token ids and seed
/// that, with the text streamed, make the answer record the receipt hashes.
fn receipt_event(on: &OnLease, prompt_tokens: usize, record: &AnswerRecord) -> String {
    let units = gpuchain_compute::serving::answer_units(prompt_tokens, record);
    match on.receipt(&record.bytes(), units) {
        Ok(r) => json!({"gpuchain_receipt": r,
                        "gpuchain_answer": {"tokens": record.tokens, "seed": record.seed}})
        .to_string(),
        Err(why) => json!({"error": {"message": why, "type": "server_error"}}).to_string(),
    }
}

/// `POST /v1/gpuchain/acks`: a client's gateway acknowledges a batch of receipts.
async fn acks(State(s): State<Served>, body: Bytes) -> Response {
    let Some(ledger) = s.ledger.clone() else {
        return error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "this endpoint serves no chain leases",
        );
    };
    let batch = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                format!("not an acknowledged batch: {e}"),
            )
        }
    };
    match ledger.accept(batch).await {
        Ok(()) => json_answer(&json!({"accepted": true})),
        Err(why) => error(StatusCode::BAD_REQUEST, "invalid_request_error", why),
    }
}

fn usage_of(prompt_tokens: usize, completion_tokens: usize) -> Value {
    json!({"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
           "total_tokens": prompt_tokens + completion_tokens})
}

/// Generates `p` on a slot (in its model's batch) and answers in `shape`, whole, or (`stream` is `Some(include
/// usage)`) streamed as server-sent events, ending with the token counts when asked.
async fn answer(
    s: &Served,
    model: Arc<Model>,
    p: Prepared,
    stream: Option<bool>,
    shape: Shape,
    arrived: Instant,
    lease: Option<OnLease>,
) -> Response {
    let Some(slot) = s.take_slot() else {
        return busy();
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let name = model.name.clone();
    s.batches.submit(Request {
        model,
        prepared: p,
        tx,
        arrived,
        slot,
    });
    let id = format!(
        "{}-{:016x}",
        shape.id_prefix(),
        rand_core::RngCore::next_u64(&mut rand_core::OsRng)
    );
    let created = now();
    if let Some(include_usage) = stream {
        let object = shape.object(true);
        let chunk = move |choices: Value| {
            json!({"id": id, "object": object, "created": created, "model": name,
                   "choices": choices})
        };
        let mut first = true;
        let mut done = false;
        let mut usage: Option<Value> = None;
        let mut receipt: Option<String> = None;
        let events = futures::stream::poll_fn(move |cx| {
            if done {
                return std::task::Poll::Ready(None);
            }
            if let Some(u) = usage.take() {
                let mut last = chunk(json!([]));
                last["usage"] = u;
                return std::task::Poll::Ready(Some(Ok::<_, Infallible>(
                    Event::default().data(last.to_string()),
                )));
            }
            if let Some(r) = receipt.take() {
                return std::task::Poll::Ready(Some(Ok::<_, Infallible>(Event::default().data(r))));
            }
            rx.poll_recv(cx).map(|piece| {
                let data = match piece {
                    Some(Piece::Text(text)) => {
                        let choice = shape.streamed(Some(&text), first, Value::Null);
                        first = false;
                        chunk(json!([choice])).to_string()
                    }
                    Some(Piece::Done {
                        stopped,
                        prompt_tokens,
                        completion_tokens,
                        record,
                    }) => {
                        if include_usage {
                            usage = Some(usage_of(prompt_tokens, completion_tokens));
                        }
                        if let Some(on) = &lease {
                            receipt = Some(receipt_event(on, prompt_tokens, &record));
                        }
                        let finish = if stopped { "stop" } else { "length" };
                        chunk(json!([shape.streamed(None, first, json!(finish))])).to_string()
                    }
                    None => {
                        done = true;
                        "[DONE]".to_string()
                    }
                };
                Some(Ok::<_, Infallible>(Event::default().data(data)))
            })
        });
        return Sse::new(events).into_response();
    }
    let mut text = String::new();
    while let Some(piece) = rx.recv().await {
        match piece {
            Piece::Text(t) => text.push_str(&t),
            Piece::Done {
                prompt_tokens,
                completion_tokens,
                stopped,
                record,
            } => {
                let finish = if stopped { "stop" } else { "length" };
                let mut body = json!({
                    "id": id, "object": shape.object(false), "created": created, "model": name,
                    "choices": [shape.whole(&text, finish)],
                    "usage": usage_of(prompt_tokens, completion_tokens)
                });
                if let Some(on) = &lease {
                    let units = gpuchain_compute::serving::answer_units(prompt_tokens, &record);
                    match on.receipt(&record.bytes(), units) {
                        Ok(r) => {
                            body["gpuchain_receipt"] = r;
                            body["gpuchain_answer"] =
                                json!({"tokens": record.tokens, "seed": record.seed});
                        }
                        Err(why) => {
                            return error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", why)
                        }
                    }
                }
                return json_answer(&body);
            }
        }
    }
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        "generation ended without an answer",
    )
}
