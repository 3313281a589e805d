//! `POST /v1/embeddings`: sentence embeddings in OpenAI's shape, as float arrays or (what the
//! official Python client asks for by default) base64 of little-endian f32.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Value};

use super::http::{busy, error, Served};

/// Most inputs in one request (OpenAI's limit).
const MAX_INPUTS: usize = 2048;
/// Most bytes of text in one request.
const MAX_TEXT_BYTES: usize = 1 << 20;
/// Sentences embedded together.
const BATCH: usize = 32;

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Input {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
struct EmbeddingRequest {
    model: String,
    input: Input,
    encoding_format: Option<String>,
    dimensions: Option<usize>,
}

pub(super) async fn embeddings(
    State(s): State<Served>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let answer = match super::http::on_lease(
        &s,
        &headers,
        &body,
        gpuchain_serving::ServingKind::Embedding,
    )
    .await
    {
        Ok(lease) => embedding_answer(&s, body, lease).await,
        Err(refused) => refused,
    };
    s.count(answer, &s.stats.embedding_requests)
}

async fn embedding_answer(
    s: &Served,
    body: Bytes,
    lease: Option<super::http::OnLease>,
) -> Response {
    let bad = |m: String| error(StatusCode::BAD_REQUEST, "invalid_request_error", m);
    let req: EmbeddingRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return bad(format!(
                "malformed request (`input` must be a string or an array of strings): {e}"
            ))
        }
    };
    let Some(model) = s.embedder.clone().filter(|e| e.name == req.model) else {
        return error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!("embedding model `{}` is not served here", req.model),
        );
    };
    let inputs = match req.input {
        Input::One(t) => vec![t],
        Input::Many(v) => v,
    };
    if inputs.is_empty() || inputs.len() > MAX_INPUTS {
        return bad(format!("`input` must hold 1 to {MAX_INPUTS} strings"));
    }
    if inputs.iter().any(String::is_empty) {
        return bad("`input` holds an empty string".into());
    }
    if inputs.iter().map(String::len).sum::<usize>() > MAX_TEXT_BYTES {
        return bad(format!("`input` is over {MAX_TEXT_BYTES} bytes"));
    }
    let hidden = model.embedder.hidden();
    if req.dimensions.is_some_and(|d| d != hidden) {
        return bad(format!("this model gives {hidden} dimensions"));
    }
    let base64 = match req.encoding_format.as_deref() {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => return bad(format!("encoding_format `{other}`: float or base64")),
    };
    if let Some(on) = &lease {
        let most = inputs
            .len()
            .saturating_mul(super::http::ANSWER_BYTES_PER_EMBEDDING)
            + 256;
        if let Some(refused) = on.too_large(most) {
            return refused;
        }
    }
    let Some(slot) = s.take_slot() else {
        return busy();
    };
    let worker = model.clone();
    let done = tokio::task::spawn_blocking(move || {
        let out = worker.embedder.embed(&inputs, BATCH);
        drop(slot);
        out
    })
    .await;
    let (vectors, tokens) = match done {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => return bad(e.to_string()),
        Err(e) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                format!("embedding failed: {e}"),
            )
        }
    };
    let data: Vec<Value> = vectors
        .chunks(hidden)
        .enumerate()
        .map(|(i, v)| {
            let embedding = if base64 {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(v)
            };
            json!({"object": "embedding", "index": i, "embedding": embedding})
        })
        .collect();
    let count = data.len() as u64;
    // One body, so that a receipt hashes exactly the bytes sent.
    let body = json!({"object": "list", "data": data, "model": model.name,
                      "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})
    .to_string();
    let receipt = match lease.map(|on| on.receipt(body.as_bytes(), count)) {
        None => None,
        Some(Ok(r)) => match axum::http::HeaderValue::from_str(&r.to_string()) {
            Ok(v) => Some(v),
            Err(e) => {
                return error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "server_error",
                    e.to_string(),
                )
            }
        },
        Some(Err(why)) => return error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", why),
    };
    let mut answer = json_answer_text(body);
    if let Some(v) = receipt {
        // The receipt travels in a header.
        answer.headers_mut().insert("x-gpuchain-receipt", v);
    }
    answer
}

/// A 200 answer whose JSON body is `text` exactly.
fn json_answer_text(text: String) -> Response {
    use axum::response::IntoResponse;
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        text,
    )
        .into_response()
}
