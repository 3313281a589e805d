//! Training over the network: the client runs a coordinator service and each leased
//! provider runs one worker against it.
//!
//! Protocol (HTTP/1.1, JSON or borsh bodies):
//! - `GET /train/status` → [`RoundStatus`]: the round to run, the weights to start it from
//!   (a blob served at `GET /blob/<hash>` by the same server), and once every round is
//!   done the transcript root.
//! - `POST /train/submit` with a borsh [`Submission`]: one worker's compressed update for
//!   the current round, the worker's checkpoint from before the round (kept for training
//!   audits) and its mean local loss. When all k updates of a round are in, the coordinator
//!   averages them (exactly as [`super::Coordinator::apply_round`] does in one process),
//!   publishes the next weights and records the round's progress.
//! - `GET /train/transcript` → [`Transcript`]: every round record, the checkpoint blobs and
//!   the progress of each round.
//!
//! A worker trusts nothing it is sent: weights are checked against their blob hash, and
//! before it accepts the final transcript root it checks that every round records its own
//! update hash and that the root recomputes from the records and the final weights. The
//! root is the job's result, the hash each provider commits and reveals on chain; the
//! distributed run produces exactly the transcript a single-process run of the same spec
//! does.

mod protocol;
mod server;
mod worker;

pub use protocol::{RoundProgress, RoundStatus, Submission, Transcript};
pub use server::{serve_coordinator, CoordinatorService};
pub use worker::{run_remote_worker, RemoteWorkerResult};
