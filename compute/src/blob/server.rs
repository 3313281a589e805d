//! HTTP server for a [`BlobStore`]: `GET /blob/<hex>`, `PUT /blob/<hex>`, `POST /blob`.

use std::io::Write;
use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use futures::StreamExt;
use gpuchain_jobspec::BlobHash;

use super::BlobStore;

/// Largest upload accepted by default (4 GiB).
pub const DEFAULT_MAX_UPLOAD_BYTES: u64 = 4 << 30;

/// Serves a blob store over HTTP.
#[derive(Clone, Debug)]
pub struct BlobServer {
    store: BlobStore,
    max_upload_bytes: u64,
}

impl BlobServer {
    /// A server for `store` with the default upload limit.
    pub fn new(store: BlobStore) -> Self {
        Self {
            store,
            max_upload_bytes: DEFAULT_MAX_UPLOAD_BYTES,
        }
    }

    /// Sets the largest upload accepted.
    pub fn max_upload_bytes(mut self, max: u64) -> Self {
        self.max_upload_bytes = max;
        self
    }

    /// The axum router (mount it in a larger app, or use [`serve`]).
    pub fn router(self) -> Router {
        Router::new()
            .route("/blob/{hash}", get(get_blob).put(put_blob))
            .route("/blob", post(post_blob))
            .with_state(self)
    }
}

/// Binds `addr` (port 0 picks a free port) and serves `server` in a background task.
/// Returns the bound address and the task.
pub async fn serve(
    server: BlobServer,
    addr: SocketAddr,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let app = server.router();
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "blob server stopped");
        }
    });
    Ok((local, task))
}

fn text(status: StatusCode, msg: impl Into<String>) -> Response {
    (status, msg.into()).into_response()
}

async fn get_blob(State(s): State<BlobServer>, Path(hex): Path<String>) -> Response {
    let Some(hash) = BlobHash::from_hex(&hex) else {
        return text(
            StatusCode::BAD_REQUEST,
            "blob name must be 64 hex characters",
        );
    };
    match tokio::fs::read(s.store.path(&hash)).await {
        Ok(bytes) => ([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            text(StatusCode::NOT_FOUND, "no such blob")
        }
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn put_blob(State(s): State<BlobServer>, Path(hex): Path<String>, body: Body) -> Response {
    let Some(expected) = BlobHash::from_hex(&hex) else {
        return text(
            StatusCode::BAD_REQUEST,
            "blob name must be 64 hex characters",
        );
    };
    match receive(&s, body, Some(expected)).await {
        Ok(hash) => text(StatusCode::CREATED, hash.to_hex()),
        Err(resp) => resp,
    }
}

async fn post_blob(State(s): State<BlobServer>, body: Body) -> Response {
    match receive(&s, body, None).await {
        Ok(hash) => text(StatusCode::CREATED, hash.to_hex()),
        Err(resp) => resp,
    }
}

/// Streams an upload into a temporary file while hashing; keeps it only if the hash matches
/// `expected` (when given).
async fn receive(
    s: &BlobServer,
    body: Body,
    expected: Option<BlobHash>,
) -> Result<BlobHash, Response> {
    let placeholder = expected.unwrap_or(BlobHash([0; 32]));
    let tmp = s.store.temp_path(&placeholder);
    let outcome = async {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&tmp).map_err(internal)?);
        let mut hasher = blake3::Hasher::new();
        let mut size = 0u64;
        let mut stream = body.into_data_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| text(StatusCode::BAD_REQUEST, format!("upload: {e}")))?;
            size += chunk.len() as u64;
            if size > s.max_upload_bytes {
                return Err(text(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("uploads are limited to {} bytes", s.max_upload_bytes),
                ));
            }
            hasher.update(&chunk);
            file.write_all(&chunk).map_err(internal)?;
        }
        file.flush().map_err(internal)?;
        let actual = BlobHash(*hasher.finalize().as_bytes());
        if let Some(want) = expected {
            if want != actual {
                return Err(text(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    format!("hash mismatch: the URL names {want} but the body hashes to {actual}"),
                ));
            }
        }
        s.store
            .commit_temp(&tmp, &actual)
            .map_err(|e| text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        Ok(actual)
    }
    .await;
    if outcome.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    outcome
}

fn internal(e: std::io::Error) -> Response {
    text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}
