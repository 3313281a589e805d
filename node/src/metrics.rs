//! Prometheus metrics of a running node (`GET /metrics` on app.toml's `metrics_listen`):
//! [`MeteredApp`] wraps the ABCI application and counts what passes through it — blocks,
//! their FinalizeBlock and Commit time, transactions by outcome, CheckTx rejects by code —
//! and the market's state (open orders, active leases, escrow and verification pool
//! balances) and the database's size on disk are read at scrape time. Measuring time here
//! never reaches state: this module sits outside `app/` and `store/`, the consensus code.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gpuchain_agent_kit::metrics::{metric, process_metrics, Render};
use gpuchain_auction::{module_account, AuctionRead};
use gpuchain_bank::BankRead;
use tendermint_proto::v0_38::abci::{
    RequestApplySnapshotChunk, RequestCheckTx, RequestFinalizeBlock, RequestInfo, RequestInitChain,
    RequestLoadSnapshotChunk, RequestOfferSnapshot, RequestPrepareProposal, RequestProcessProposal,
    RequestQuery, ResponseApplySnapshotChunk, ResponseCheckTx, ResponseCommit,
    ResponseFinalizeBlock, ResponseInfo, ResponseInitChain, ResponseListSnapshots,
    ResponseLoadSnapshotChunk, ResponseOfferSnapshot, ResponsePrepareProposal,
    ResponseProcessProposal, ResponseQuery,
};

use gpuchain_chain::App;

/// Counters kept between scrapes.
#[derive(Default)]
struct Counts {
    height: u64,
    blocks: u64,
    finalize: Duration,
    last_finalize: Duration,
    commit: Duration,
    last_commit: Duration,
    txs_ok: u64,
    txs_failed: u64,
    check_accepted: u64,
    /// CheckTx rejections by (codespace, code).
    check_rejected: BTreeMap<(String, u32), u64>,
}

/// The application with its metrics.
#[derive(Clone)]
pub struct MeteredApp {
    app: App,
    counts: Arc<Mutex<Counts>>,
    db_dir: PathBuf,
}

impl MeteredApp {
    /// Wraps `app`, whose database lives in `db_dir`.
    pub fn new(app: App, db_dir: &Path) -> MeteredApp {
        let height = app.committed().0;
        MeteredApp {
            app,
            counts: Arc::new(Mutex::new(Counts {
                height,
                ..Counts::default()
            })),
            db_dir: db_dir.to_path_buf(),
        }
    }

    fn with_counts(&self, f: impl FnOnce(&mut Counts)) {
        if let Ok(mut c) = self.counts.lock() {
            f(&mut c);
        }
    }

    /// What `GET /metrics` answers, rendered at each scrape.
    pub fn render(&self) -> Render {
        let me = self.clone();
        Arc::new(move || me.exposition())
    }

    fn exposition(&self) -> String {
        let mut out = String::new();
        if let Ok(c) = self.counts.lock() {
            counters(&mut out, &c);
        }
        let market = self.app.read_committed(|store| {
            let open = store
                .orders()
                .iter()
                .filter(|o| !o.state.is_closed())
                .count();
            let active = store
                .leases()
                .iter()
                .filter(|l| !l.state.is_final())
                .count();
            (
                open,
                active,
                store.balance(&module_account::escrow()),
                store.balance(&module_account::verification_pool()),
            )
        });
        let (open, active, escrow, pool) = market;
        let (live_keys, live_bytes) = self
            .app
            .read_committed(|store| store.live_state_size())
            .unwrap_or_default();
        metric(
            &mut out,
            "gpuchain_node_state_keys",
            "gauge",
            "Keys in the latest state (live state, without history).",
            live_keys,
        );
        metric(
            &mut out,
            "gpuchain_node_state_bytes",
            "gauge",
            "Bytes of keys and values in the latest state.",
            live_bytes,
        );
        metric(
            &mut out,
            "gpuchain_node_open_orders",
            "gauge",
            "Orders open or cleared, not settled.",
            open,
        );
        metric(
            &mut out,
            "gpuchain_node_active_leases",
            "gauge",
            "Leases not final yet.",
            active,
        );
        metric(
            &mut out,
            "gpuchain_node_escrow_ugpu",
            "gauge",
            "Balance of the auction's escrow.",
            escrow,
        );
        metric(
            &mut out,
            "gpuchain_node_verification_pool_ugpu",
            "gauge",
            "Balance of the verification pool.",
            pool,
        );
        metric(
            &mut out,
            "gpuchain_node_state_disk_bytes",
            "gauge",
            "Size of the state database on disk.",
            dir_size(&self.db_dir),
        );
        process_metrics(&mut out);
        out
    }
}

/// `d` in seconds with microsecond precision, without floats.
fn seconds(d: Duration) -> String {
    format!("{}.{:06}", d.as_secs(), d.subsec_micros())
}

fn counters(out: &mut String, c: &Counts) {
    metric(
        out,
        "gpuchain_node_height",
        "gauge",
        "Last height finalized.",
        c.height,
    );
    metric(
        out,
        "gpuchain_node_blocks_total",
        "counter",
        "Blocks finalized since start.",
        c.blocks,
    );
    metric(
        out,
        "gpuchain_node_finalize_block_seconds_total",
        "counter",
        "Time spent in FinalizeBlock.",
        seconds(c.finalize),
    );
    metric(
        out,
        "gpuchain_node_finalize_block_last_seconds",
        "gauge",
        "FinalizeBlock time of the last block.",
        seconds(c.last_finalize),
    );
    metric(
        out,
        "gpuchain_node_commit_seconds_total",
        "counter",
        "Time spent in Commit.",
        seconds(c.commit),
    );
    metric(
        out,
        "gpuchain_node_commit_last_seconds",
        "gauge",
        "Commit time of the last block.",
        seconds(c.last_commit),
    );
    let _ = writeln!(
        out,
        "# HELP gpuchain_node_txs_total Transactions in finalized blocks, by outcome.\n\
         # TYPE gpuchain_node_txs_total counter\n\
         gpuchain_node_txs_total{{outcome=\"ok\"}} {}\n\
         gpuchain_node_txs_total{{outcome=\"failed\"}} {}",
        c.txs_ok, c.txs_failed
    );
    let _ = writeln!(
        out,
        "# HELP gpuchain_node_checktx_total Mempool CheckTx results, rejects by codespace and code.\n\
         # TYPE gpuchain_node_checktx_total counter\n\
         gpuchain_node_checktx_total{{result=\"accepted\"}} {}",
        c.check_accepted
    );
    for ((codespace, code), n) in &c.check_rejected {
        let _ = writeln!(
            out,
            "gpuchain_node_checktx_total{{result=\"rejected\",codespace=\"{codespace}\",code=\"{code}\"}} {n}"
        );
    }
}

/// Bytes of the files under `dir` (0 when it cannot be read).
fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Runs `f`, returning its value and how long it took.
#[allow(clippy::disallowed_methods)] // Metrics only: the duration never reaches state.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = std::time::Instant::now();
    let value = f();
    (value, start.elapsed())
}

impl MeteredApp {
    fn count_checks(&self, results: &[ResponseCheckTx]) {
        self.with_counts(|c| {
            for res in results {
                if res.code == 0 {
                    c.check_accepted += 1;
                } else {
                    *c.check_rejected
                        .entry((res.codespace.clone(), res.code))
                        .or_default() += 1;
                }
            }
        });
    }
}

impl crate::abci_server::BatchedChecks for MeteredApp {
    fn check_tx_batch(&self, requests: Vec<RequestCheckTx>) -> Vec<ResponseCheckTx> {
        let results = self.app.check_tx_requests(&requests);
        self.count_checks(&results);
        results
    }
}

impl tendermint_abci::Application for MeteredApp {
    fn info(&self, req: RequestInfo) -> ResponseInfo {
        self.app.info(req)
    }

    fn init_chain(&self, req: RequestInitChain) -> ResponseInitChain {
        self.app.init_chain(req)
    }

    fn query(&self, req: RequestQuery) -> ResponseQuery {
        self.app.query(req)
    }

    fn check_tx(&self, req: RequestCheckTx) -> ResponseCheckTx {
        let res = tendermint_abci::Application::check_tx(&self.app, req);
        self.count_checks(std::slice::from_ref(&res));
        res
    }

    fn prepare_proposal(&self, req: RequestPrepareProposal) -> ResponsePrepareProposal {
        self.app.prepare_proposal(req)
    }

    fn process_proposal(&self, req: RequestProcessProposal) -> ResponseProcessProposal {
        self.app.process_proposal(req)
    }

    fn finalize_block(&self, req: RequestFinalizeBlock) -> ResponseFinalizeBlock {
        let height = u64::try_from(req.height).unwrap_or(0);
        let (res, took) = timed(|| self.app.finalize_block(req));
        let ok = res.tx_results.iter().filter(|r| r.code == 0).count() as u64;
        let failed = res.tx_results.len() as u64 - ok;
        self.with_counts(|c| {
            c.height = height;
            c.blocks += 1;
            c.finalize += took;
            c.last_finalize = took;
            c.txs_ok += ok;
            c.txs_failed += failed;
        });
        res
    }

    fn commit(&self) -> ResponseCommit {
        let (res, took) = timed(|| tendermint_abci::Application::commit(&self.app));
        self.with_counts(|c| {
            c.commit += took;
            c.last_commit = took;
        });
        res
    }

    fn list_snapshots(&self) -> ResponseListSnapshots {
        self.app.list_snapshots()
    }

    fn load_snapshot_chunk(&self, req: RequestLoadSnapshotChunk) -> ResponseLoadSnapshotChunk {
        self.app.load_snapshot_chunk(req)
    }

    fn offer_snapshot(&self, req: RequestOfferSnapshot) -> ResponseOfferSnapshot {
        self.app.offer_snapshot(req)
    }

    fn apply_snapshot_chunk(&self, req: RequestApplySnapshotChunk) -> ResponseApplySnapshotChunk {
        self.app.apply_snapshot_chunk(req)
    }
}
