//! Continuous batching: every request generating on one chat model is decoded in the same
//! passes over its weights. A model's batch runs on a thread of its own while it has
//! requests; a request joins between two steps (its prompt read [`PROMPT_CHUNK`] tokens a
//! step, beside the others' next tokens) and leaves as soon as its answer ends. A new
//! request so waits about one step for its prompt to start being read, not for another
//! answer to finish, and eight answers cost about one pass over the weights a token, not
//! eight.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use gpuchain_compute::llama::Sequence;
use gpuchain_compute::serving::{AnswerRecord, Prepared};
use tokio::sync::{mpsc, OwnedSemaphorePermit};

use super::stats::Stats;
use super::Model;

/// Most prompt tokens of one request read in one step: a long prompt joining a batch holds
/// up the others' next tokens for at most one chunk's prefill at a time.
pub(super) const PROMPT_CHUNK: usize = 128;

/// What a generation sends its request: text as it becomes whole, then the end.
pub(super) enum Piece {
    Text(String),
    Done {
        prompt_tokens: usize,
        completion_tokens: usize,
        stopped: bool,
        record: AnswerRecord,
    },
}

/// One request's generation, handed to its model's batch.
pub(super) struct Request {
    pub(super) model: Arc<Model>,
    pub(super) prepared: Prepared,
    pub(super) tx: mpsc::UnboundedSender<Piece>,
    pub(super) arrived: Instant,
    /// Held until the answer is complete; given back before the last piece is sent, so that
    /// a client that has its whole answer finds the slot free for its next request.
    pub(super) slot: OwnedSemaphorePermit,
}

/// Requests waiting to join a model's batch, and whether its thread runs.
#[derive(Default)]
struct Queue {
    waiting: Vec<Request>,
    running: bool,
}

/// The batches of an endpoint, one per model that has requests.
pub(super) struct Batches {
    queues: Mutex<BTreeMap<String, Queue>>,
    stats: Arc<Stats>,
    /// Test only: shift every generated token (a cheaper model's answer).
    dishonest: bool,
}

impl Batches {
    pub(super) fn new(stats: Arc<Stats>, dishonest: bool) -> Batches {
        Batches {
            queues: Mutex::default(),
            stats,
            dishonest,
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Queue>> {
        // A poisoned lock only means a panic elsewhere mid-update; the queues are still whole.
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands `r` to its model's batch, starting the batch's thread if it is not running.
    pub(super) fn submit(self: &Arc<Self>, r: Request) {
        let name = r.model.name.clone();
        let start = {
            let mut queues = self.lock();
            let queue = queues.entry(name.clone()).or_default();
            queue.waiting.push(r);
            !std::mem::replace(&mut queue.running, true)
        };
        if !start {
            return;
        }
        let batches = self.clone();
        let thread = format!("batch {name}");
        let spawned = std::thread::Builder::new().name(thread).spawn({
            let name = name.clone();
            move || batches.run(&name)
        });
        if let Err(e) = spawned {
            tracing::error!(model = %name, error = %e, "no thread for the batch");
            // Dropping the requests closes their channels: each is answered with an error.
            if let Some(queue) = self.lock().get_mut(&name) {
                queue.waiting.clear();
                queue.running = false;
            }
        }
    }

    /// The requests waiting for `name` that run on `model` (on the first waiting one's model
    /// when `None`; if none waits then, the batch's thread is marked stopped).
    fn take(&self, name: &str, model: Option<&Arc<Model>>) -> Vec<Request> {
        let mut queues = self.lock();
        let Some(queue) = queues.get_mut(name) else {
            return Vec::new();
        };
        let Some(model) = model.or(queue.waiting.first().map(|r| &r.model)).cloned() else {
            queue.running = false;
            return Vec::new();
        };
        // A model unloaded and loaded again is another `Arc`: its requests wait for this
        // batch to end.
        let (joining, waiting) = std::mem::take(&mut queue.waiting)
            .into_iter()
            .partition(|r| Arc::ptr_eq(&r.model, &model));
        queue.waiting = waiting;
        joining
    }

    /// The batch thread of `name`: batches until no request waits.
    fn run(&self, name: &str) {
        loop {
            let joining = self.take(name, None);
            let Some(model) = joining.first().map(|r| r.model.clone()) else {
                return;
            };
            let last = self.run_batch(name, &model, joining);
            // The model too, before the last answers end: a client that has its answer may
            // ask for another model at once, and the cache unloads only models no one holds.
            drop(model);
            for (tx, piece) in last {
                let _ = tx.send(piece);
            }
        }
    }

    /// Steps `model`'s batch, admitting requests between steps, until it is empty; returns
    /// the last answers' ends, to be sent once the batch lets go of the model.
    fn run_batch(
        &self,
        name: &str,
        model: &Arc<Model>,
        mut joining: Vec<Request>,
    ) -> Vec<(mpsc::UnboundedSender<Piece>, Piece)> {
        let mut active: Vec<Answer<'_>> = Vec::new();
        loop {
            active.extend(
                joining
                    .drain(..)
                    .map(|r| Answer::new(model, r, &self.stats)),
            );
            let mut seqs: Vec<&mut Sequence<'_>> = active.iter_mut().map(|a| &mut a.seq).collect();
            let tokens = Sequence::step(&mut seqs, PROMPT_CHUNK);
            self.stats.step(active.len());
            let mut ends = Vec::new();
            let mut going = Vec::with_capacity(active.len());
            for (mut a, token) in active.drain(..).zip(tokens) {
                let state = match token {
                    Some(t) => a.take(t, model, &self.stats, self.dishonest),
                    None if a.tx.is_closed() => State::Gone,
                    None => State::Going,
                };
                match state {
                    State::Going => going.push(a),
                    State::Ended => ends.push(a.finish(model, &self.stats)),
                    State::Gone => {}
                }
            }
            active = going;
            joining = self.take(name, Some(model));
            if active.is_empty() && joining.is_empty() {
                return ends;
            }
            for (tx, piece) in ends {
                let _ = tx.send(piece);
            }
        }
    }
}

/// Where an answer stands after a token.
enum State {
    Going,
    Ended,
    /// The client went away.
    Gone,
}

/// One answer in a batch.
struct Answer<'m> {
    seq: Sequence<'m>,
    tx: mpsc::UnboundedSender<Piece>,
    arrived: Instant,
    joined: Instant,
    slot: OwnedSemaphorePermit,
    prompt_tokens: usize,
    max_tokens: usize,
    seed: Option<u64>,
    /// Generated, the end-of-sequence token not included.
    tokens: Vec<u32>,
    /// Bytes of text sent.
    sent: usize,
    stopped: bool,
}

impl<'m> Answer<'m> {
    fn new(model: &'m Model, r: Request, stats: &Stats) -> Answer<'m> {
        let p = r.prepared;
        let seed = match &p.sampling {
            gpuchain_jobspec::Sampling::Seeded { seed, .. } => Some(*seed),
            gpuchain_jobspec::Sampling::Greedy => None,
        };
        let mut seq = model.decoder.start(&p.prompt, &p.sampling, 0);
        // The chat template and system message most prompts begin with are read once.
        let reused = seq.reuse_prefix(&mut model.prefixes());
        stats.prompt(p.prompt.len(), reused);
        Answer {
            seq,
            tx: r.tx,
            arrived: r.arrived,
            joined: Instant::now(),
            slot: r.slot,
            prompt_tokens: p.prompt.len(),
            max_tokens: p.max_tokens,
            seed,
            tokens: Vec::new(),
            sent: 0,
            stopped: false,
        }
    }

    /// Takes the token `t` the model gave: sends the text it completes.
    fn take(&mut self, t: u32, model: &Model, stats: &Stats, dishonest: bool) -> State {
        let vocab = u32::try_from(model.decoder.vocab()).unwrap_or(u32::MAX);
        let t = if dishonest && Some(t) != model.eos {
            (t + 1) % vocab
        } else {
            t
        };
        if self.tokens.is_empty() {
            stats.first_token(self.arrived.elapsed());
            self.seq.share_prompt(&mut model.prefixes());
        }
        if Some(t) == model.eos {
            self.stopped = true;
            return State::Ended;
        }
        self.tokens.push(t);
        let text = model.text(&self.tokens);
        // A token can end inside a character; wait for the rest of it.
        if text.len() > self.sent && !text.ends_with('\u{FFFD}') && text.is_char_boundary(self.sent)
        {
            if self
                .tx
                .send(Piece::Text(text[self.sent..].to_string()))
                .is_err()
            {
                return State::Gone;
            }
            self.sent = text.len();
        }
        if self.tokens.len() >= self.max_tokens {
            State::Ended
        } else {
            State::Going
        }
    }

    /// The rest of the text (sent now) and the answer's end (to be sent by the caller),
    /// giving the slot back.
    fn finish(self, model: &Model, stats: &Stats) -> (mpsc::UnboundedSender<Piece>, Piece) {
        let text = model.text(&self.tokens);
        if text.len() > self.sent && text.is_char_boundary(self.sent) {
            let _ = self.tx.send(Piece::Text(text[self.sent..].to_string()));
        }
        let completion = self.tokens.len() + usize::from(self.stopped);
        stats.generated(completion as u64, self.joined.elapsed());
        let mut ids = self.tokens;
        if let (true, Some(eos)) = (self.stopped, model.eos) {
            ids.push(eos);
        }
        drop(self.slot);
        let done = Piece::Done {
            prompt_tokens: self.prompt_tokens,
            completion_tokens: completion,
            stopped: self.stopped,
            record: AnswerRecord {
                text,
                tokens: ids,
                seed: self.seed,
            },
        };
        (self.tx, done)
    }
}
