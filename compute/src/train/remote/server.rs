//! The coordinator service the client runs: collects each round's updates over HTTP,
//! averages them, and publishes the next weights and the transcript.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use borsh::BorshDeserialize;
use gpuchain_jobspec::{BlobRef, TrainingSpec};

use super::protocol::{RoundProgress, RoundRecordJson, RoundStatus, Submission, Transcript};
use crate::blob::{BlobServer, BlobStore};
use crate::train::{Coordinator, TrainTask, UpdateMessage};
use crate::{Error, Result};

struct Inner {
    coord: Coordinator,
    rounds: u32,
    weights: BlobRef,
    broadcast: Option<BlobRef>,
    pending: BTreeMap<u32, Submission>,
    task: TrainTask,
    initial_accuracy: f64,
    checkpoints: Vec<(u32, u32, BlobRef)>,
    updates: Vec<(u32, u32, BlobRef)>,
    progress: Vec<RoundProgress>,
}

/// A training coordinator behind HTTP; cheap to clone (shared state).
#[derive(Clone)]
pub struct CoordinatorService {
    inner: Arc<Mutex<Inner>>,
    store: BlobStore,
}

/// Why a submission was refused; maps to an HTTP status.
#[derive(Debug)]
pub struct Refused {
    status: StatusCode,
    reason: String,
}

impl Refused {
    fn new(status: StatusCode, reason: impl Into<String>) -> Self {
        Self {
            status,
            reason: reason.into(),
        }
    }
}

impl CoordinatorService {
    /// Starts round 0 of `spec` from `task.init`; the task's test split measures accuracy
    /// after every round. Blobs go to `store`. Blocks while the task scores its starting
    /// weights (for a fine-tuning job this encodes the test split once).
    pub fn new(spec: &TrainingSpec, task: TrainTask, store: BlobStore) -> Result<Self> {
        let init = &task.init;
        let weights = store.put(&init.to_safetensors()?)?;
        let initial_accuracy = task.evaluate(init)?;
        tracing::info!(accuracy = initial_accuracy, "training starts");
        Ok(Self {
            inner: Arc::new(Mutex::new(Inner {
                coord: Coordinator::new(spec, init),
                rounds: spec.rounds,
                weights,
                broadcast: None,
                pending: BTreeMap::new(),
                task,
                initial_accuracy,
                checkpoints: Vec::new(),
                updates: Vec::new(),
                progress: Vec::new(),
            })),
            store,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A poisoned lock only means a handler panicked mid-update; the state is still the
        // last consistent one because rounds are applied in one step.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Where training is.
    pub fn status(&self) -> RoundStatus {
        let inner = self.lock();
        let round = inner.coord.round();
        RoundStatus {
            round,
            rounds: inner.rounds,
            workers: inner.coord.workers(),
            weights: inner.weights.clone(),
            broadcast: inner.broadcast.clone(),
            submitted: inner.pending.keys().copied().collect(),
            transcript_root: (round >= inner.rounds)
                .then(|| hex::encode(inner.coord.transcript_root())),
        }
    }

    /// The transcript so far.
    pub fn transcript(&self) -> Transcript {
        let inner = self.lock();
        Transcript {
            records: inner
                .coord
                .records()
                .iter()
                .map(RoundRecordJson::from)
                .collect(),
            checkpoints: inner.checkpoints.clone(),
            updates: inner.updates.clone(),
            initial_accuracy: inner.initial_accuracy,
            progress: inner.progress.clone(),
        }
    }

    /// The coordinator's state (weights, records, root).
    pub fn coordinator(&self) -> Coordinator {
        self.lock().coord.clone()
    }

    /// Takes one worker's update; applies the round when it was the last one missing.
    /// Resubmitting the identical update is accepted (a worker retrying after a lost reply).
    pub fn submit(&self, s: Submission) -> std::result::Result<(), Refused> {
        let mut inner = self.lock();
        let round = inner.coord.round();
        if round >= inner.rounds {
            return Err(Refused::new(StatusCode::CONFLICT, "training is over"));
        }
        if s.round < round {
            let recorded = inner
                .coord
                .records()
                .get(s.round as usize)
                .and_then(|r| r.update_hashes.get(s.worker as usize))
                .copied();
            return if recorded == Some(*blake3::hash(&s.update).as_bytes()) {
                Ok(())
            } else {
                Err(Refused::new(
                    StatusCode::CONFLICT,
                    format!("round {} is closed; the current round is {round}", s.round),
                ))
            };
        }
        if s.round > round {
            return Err(Refused::new(
                StatusCode::CONFLICT,
                format!(
                    "round {} has not started; the current round is {round}",
                    s.round
                ),
            ));
        }
        if s.worker >= inner.coord.workers() {
            return Err(Refused::new(
                StatusCode::BAD_REQUEST,
                format!("no worker {}", s.worker),
            ));
        }
        let message = UpdateMessage::decode(&s.update)
            .map_err(|e| Refused::new(StatusCode::BAD_REQUEST, e.to_string()))?;
        if message.round != s.round || message.worker != s.worker {
            return Err(Refused::new(
                StatusCode::BAD_REQUEST,
                "the update's own round or worker differs from the submission's",
            ));
        }
        if let Some(previous) = inner.pending.get(&s.worker) {
            return if previous.update == s.update {
                Ok(())
            } else {
                Err(Refused::new(
                    StatusCode::CONFLICT,
                    format!("worker {} already sent a different update", s.worker),
                ))
            };
        }
        inner.pending.insert(s.worker, s);
        if inner.pending.len() == inner.coord.workers() as usize {
            self.close_round(&mut inner)
                .map_err(|e| Refused::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        }
        Ok(())
    }

    fn close_round(&self, inner: &mut Inner) -> Result<()> {
        let round = inner.coord.round();
        let pending = std::mem::take(&mut inner.pending);
        let messages: Vec<Vec<u8>> = pending.values().map(|s| s.update.clone()).collect();
        if let Err(e) = inner.coord.apply_round(&messages) {
            inner.pending = pending;
            return Err(e);
        }
        let mut loss = 0.0f32;
        for s in pending.values() {
            loss += f32::from_bits(s.mean_loss_bits);
            let checkpoint = self.store.put(&s.checkpoint)?;
            inner.checkpoints.push((round, s.worker, checkpoint));
            let update = self.store.put(&s.update)?;
            inner.updates.push((round, s.worker, update));
        }
        let weights = inner.coord.weights();
        inner.weights = self.store.put(&weights.to_safetensors()?)?;
        inner.broadcast = Some(self.store.put(inner.coord.broadcast())?);
        let workers = pending.len().max(1);
        let bytes_sent: u64 = messages.iter().map(|m| m.len() as u64).sum();
        let progress = RoundProgress {
            round,
            mean_loss: loss / workers as f32,
            test_accuracy: inner.task.evaluate(&weights)?,
            bytes_sent,
            broadcast_bytes: inner.coord.broadcast().len() as u64,
            dense_bytes: (weights.numel() as u64) * 4 * workers as u64,
        };
        tracing::info!(
            round,
            loss = progress.mean_loss,
            accuracy = progress.test_accuracy,
            bytes_sent,
            dense_bytes = progress.dense_bytes,
            "training round closed"
        );
        inner.progress.push(progress);
        Ok(())
    }

    /// The HTTP routes: `/train/*` and the blob store's `/blob/*`.
    pub fn router(&self) -> Router {
        // A submission carries the update (at most every value, with its index) and the
        // worker's checkpoint (residual and velocity: two values per weight).
        let numel = self.lock().coord.weights().numel();
        let submission_limit = numel.saturating_mul(16).saturating_add(1 << 20);
        Router::new()
            .route("/train/status", get(status))
            .route("/train/transcript", get(transcript))
            .route(
                "/train/submit",
                post(submit).layer(DefaultBodyLimit::max(submission_limit)),
            )
            .with_state(self.clone())
            .merge(BlobServer::new(self.store.clone()).router())
    }
}

fn json<T: serde::Serialize>(value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

async fn status(State(s): State<CoordinatorService>) -> Response {
    json(&s.status())
}

async fn transcript(State(s): State<CoordinatorService>) -> Response {
    json(&s.transcript())
}

async fn submit(State(s): State<CoordinatorService>, body: Bytes) -> Response {
    let submission = match Submission::try_from_slice(&body) {
        Ok(sub) => sub,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("bad submission: {e}")).into_response(),
    };
    // Averaging is CPU work; keep it off the async workers.
    match tokio::task::spawn_blocking(move || s.submit(submission)).await {
        Ok(Ok(())) => StatusCode::OK.into_response(),
        Ok(Err(r)) => (r.status, r.reason).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// Binds `addr` (port 0 picks one) and serves the coordinator in a background task.
pub async fn serve_coordinator(
    service: CoordinatorService,
    addr: SocketAddr,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let app = service.router();
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "training coordinator stopped");
        }
    });
    Ok((local, task))
}

impl From<Refused> for Error {
    fn from(r: Refused) -> Self {
        Error::Training(format!("{}: {}", r.status, r.reason))
    }
}
