//! The ABCI application. CometBFT opens four connections (consensus, mempool, query,
//! snapshot), each served on its own thread with a clone of [`App`], so all clones share
//! one [`Node`] behind a read-write lock: executing a block only reads the committed state,
//! so CheckTx and queries go on beside it, and only genesis, Commit and snapshot restores
//! take the lock for writing. The mempool's own writes sit behind a mutex of their own.

mod ante;
mod convert;
mod execute;
mod genesis;
pub mod invariants;
mod keycache;
mod known_signatures;
mod layered;
mod modules;
mod query;
mod statesync;
mod upgrade;

use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use anyhow::Result;
use gpuchain_genesis::AppGenesis;
use gpuchain_staking::ValidatorUpdate;
use gpuchain_tx::{Tx, TxError};
use gpuchain_types::{BlockCtx, Write};
use tendermint_proto::v0_38::abci::{
    CheckTxType as CheckTxKind, RequestApplySnapshotChunk, RequestCheckTx, RequestFinalizeBlock,
    RequestInfo, RequestInitChain, RequestLoadSnapshotChunk, RequestOfferSnapshot,
    RequestPrepareProposal, RequestProcessProposal, RequestQuery, ResponseApplySnapshotChunk,
    ResponseCheckTx, ResponseCommit, ResponseFinalizeBlock, ResponseInfo, ResponseInitChain,
    ResponseListSnapshots, ResponseLoadSnapshotChunk, ResponseOfferSnapshot,
    ResponsePrepareProposal, ResponseProcessProposal, ResponseQuery,
};

pub use convert::EventIndex;
pub use execute::{execute_block, BlockInput, BlockOutcome, TxResult};
pub use genesis::{export, ExportedValidator};
pub use modules::check_invariants;
pub use upgrade::{released, Migration, MigrationFn, Upgrades};

use crate::store::snapshot::{Restore, SnapshotPolicy, Snapshotter};
use crate::store::{PreparedBlock, Store};
use known_signatures::KnownSignatures;

/// Everything the connections share.
struct Node {
    store: Store,
    /// Genesis writes from InitChain, committed together with block 1.
    genesis: Option<Write>,
    /// The executed but not yet committed block.
    pending: Option<PreparedBlock>,
    /// Test hook: abort at Commit of this height, after FinalizeBlock, before writing.
    crash_before_commit_at: Option<u64>,
    /// State-sync snapshots this node takes and serves, if configured.
    snapshots: Option<Snapshotter>,
    /// A snapshot being restored from peers (state sync into an empty node).
    restore: Option<Restore>,
    /// Blocks CometBFT keeps behind the head (0: all of them).
    min_retain_blocks: u64,
    /// The migrations this binary registers.
    upgrades: Upgrades,
    /// Event attributes CometBFT indexes (`None`: all).
    event_index: Option<EventIndex>,
    /// Time of the last block finalized since this process started (0 before the first).
    last_block_time_ms: u64,
}

/// The gpuchain ABCI application.
#[derive(Clone)]
pub struct App {
    node: Arc<RwLock<Node>>,
    /// Mempool view: writes of transactions accepted by CheckTx since the last commit.
    /// Taken after the node's lock, never before it.
    check_writes: Arc<Mutex<Write>>,
    /// Transactions CheckTx found validly signed, not checked again in their block.
    known_signatures: Arc<KnownSignatures>,
}

/// A broken invariant: stop loudly rather than diverge from the network.
fn halt(what: &str, e: impl std::fmt::Display) -> ! {
    tracing::error!(error = %e, "{what}; halting");
    eprintln!("FATAL: {what}: {e}");
    std::process::abort()
}

impl App {
    /// Opens the state at `db_dir`, keeping proofs for the default number of heights.
    pub fn open(db_dir: &std::path::Path) -> Result<App> {
        App::open_with_proof_window(db_dir, Some(crate::store::DEFAULT_PROOF_HEIGHTS))
    }

    /// Opens the state at `db_dir`, keeping proofs for the last `proof_heights` heights
    /// (`None`: every height).
    pub fn open_with_proof_window(
        db_dir: &std::path::Path,
        proof_heights: Option<u64>,
    ) -> Result<App> {
        let store = Store::open(db_dir)?.with_proof_heights(proof_heights);
        let crash_before_commit_at = crash_before_commit_at()?;
        tracing::info!(height = store.height(), app_hash = %hex::encode(store.app_hash()), "state opened");
        Ok(App {
            check_writes: Arc::new(Mutex::new(Write::new())),
            known_signatures: Arc::default(),
            node: Arc::new(RwLock::new(Node {
                store,
                genesis: None,
                pending: None,
                crash_before_commit_at,
                snapshots: None,
                restore: None,
                min_retain_blocks: 0,
                upgrades: Upgrades::new(),
                event_index: None,
                last_block_time_ms: 0,
            })),
        })
    }

    /// Takes state-sync snapshots as `policy` says, and serves them to joining nodes.
    pub fn with_snapshots(self, policy: SnapshotPolicy) -> App {
        self.write().snapshots = Some(Snapshotter::new(policy));
        self
    }

    /// Registers the migrations this binary can run at upgrade heights. Fails if the
    /// committed state needs a different release: an upgrade this binary does not know
    /// already ran, or this binary is the release for a plan whose height is still ahead.
    pub fn with_upgrades(self, upgrades: Upgrades) -> Result<App> {
        {
            let mut node = self.write();
            let next = node.store.height().saturating_add(1);
            upgrades.check_startup(&node.store, next)?;
            tracing::info!(registered = ?upgrades.names(), "upgrade migrations");
            node.upgrades = upgrades;
        }
        Ok(self)
    }

    /// Marks only the event attributes `index` names for CometBFT's indexer (`None`: all).
    pub fn with_event_index(self, index: Option<EventIndex>) -> App {
        self.write().event_index = index;
        self
    }

    /// Lets CometBFT delete blocks older than the last `blocks` (0 keeps all), never one
    /// a snapshot this node serves still needs to be followed from.
    pub fn with_block_retention(self, blocks: u64) -> App {
        self.write().min_retain_blocks = blocks;
        self
    }

    /// The height CometBFT may delete blocks below after a commit (0: none).
    fn retain_height(node: &Node) -> u64 {
        if node.min_retain_blocks == 0 {
            return 0;
        }
        let mut retain = node.store.height().saturating_sub(node.min_retain_blocks);
        if let Some(oldest) = node.snapshots.as_ref().and_then(Snapshotter::oldest_height) {
            retain = retain.min(oldest);
        }
        retain
    }

    fn read(&self) -> RwLockReadGuard<'_, Node> {
        self.node
            .read()
            .unwrap_or_else(|e| halt("app state lock poisoned", e))
    }

    fn write(&self) -> RwLockWriteGuard<'_, Node> {
        self.node
            .write()
            .unwrap_or_else(|e| halt("app state lock poisoned", e))
    }

    fn check_writes(&self) -> MutexGuard<'_, Write> {
        self.check_writes
            .lock()
            .unwrap_or_else(|e| halt("mempool state mutex poisoned", e))
    }

    /// Runs `f` on the committed state (for tests, simulations and tools).
    pub fn read_committed<T>(&self, f: impl FnOnce(&Store) -> T) -> T {
        f(&self.read().store)
    }

    /// Last committed height and app hash.
    pub fn committed(&self) -> (u64, [u8; 32]) {
        let node = self.read();
        (node.store.height(), node.store.app_hash())
    }

    /// Applies genesis (as InitChain does) for a chain starting at height 1; returns the
    /// genesis app hash and validator set.
    pub fn init_chain_with(
        &self,
        chain_id: &str,
        genesis: &AppGenesis,
    ) -> Result<([u8; 32], Vec<ValidatorUpdate>)> {
        self.init_chain_at(chain_id, 1, genesis)
    }

    /// Applies genesis for a chain whose first block is `initial_height` (above 1 only
    /// from an exported state).
    pub fn init_chain_at(
        &self,
        chain_id: &str,
        initial_height: u64,
        genesis: &AppGenesis,
    ) -> Result<([u8; 32], Vec<ValidatorUpdate>)> {
        let mut node = self.write();
        let (writes, validators) =
            genesis::genesis_writes(&node.store, chain_id, initial_height, genesis)?;
        let root = node.store.genesis_root(initial_height, &writes)?;
        if let Some(exported) = &genesis.exported {
            anyhow::ensure!(
                exported.chain_id != chain_id || exported.app_hash == root,
                "the exported state hashes to {} but was exported with app hash {}: the file \
                 was altered (a changed state needs a new chain id)",
                hex::encode(root),
                hex::encode(exported.app_hash)
            );
        }
        node.genesis = Some(writes);
        Ok((root, validators))
    }

    /// Executes a block (as FinalizeBlock does) and returns its outcome and app hash. The
    /// outcome's `writes` come back empty: the pending block holds them until Commit.
    pub fn finalize(&self, input: &BlockInput<'_>) -> Result<(BlockOutcome, [u8; 32])> {
        let genesis = self.write().genesis.take();
        // Only the consensus connection finalizes and commits, one call after the other:
        // nothing changes `pending` between this read and the write below.
        let node = self.read();
        let mut outcome = execute::execute_block_knowing(
            &node.store,
            genesis.clone().unwrap_or_default(),
            input,
            &node.upgrades,
            Some(&self.known_signatures),
        )
        .map_err(|e| anyhow::anyhow!("block {}: {e}", input.height))?;
        // Genesis becomes tree version 0; the block's writes (a superset) version 1.
        let writes = std::mem::take(&mut outcome.writes);
        let prepared = node.store.prepare(input.height, genesis, writes)?;
        drop(node);
        let app_hash = prepared.app_hash;
        let mut node = self.write();
        node.pending = Some(prepared);
        node.last_block_time_ms = input.time_ms;
        Ok((outcome, app_hash))
    }

    /// Persists the pending block (as Commit does).
    pub fn commit(&self) -> Result<u64> {
        let mut node = self.write();
        let Some(block) = node.pending.take() else {
            anyhow::bail!("commit without a finalized block");
        };
        if node.crash_before_commit_at == Some(block.height) {
            eprintln!(
                "GPUCHAIN_CRASH_BEFORE_COMMIT_AT={}: aborting before commit",
                block.height
            );
            std::process::abort();
        }
        node.store.commit(block)?;
        *self.check_writes() = Write::new();
        let height = node.store.height();
        if let Some(snapshots) = node.snapshots.as_ref().filter(|s| s.due(height)) {
            // A snapshot that fails to start costs this node its snapshot, never the block.
            if let Err(e) = snapshots.start(&node.store) {
                tracing::error!(height, error = %format!("{e:#}"), "state-sync snapshot not taken");
            }
        }
        Ok(height)
    }

    /// CheckTx against the committed state plus the writes of transactions already accepted
    /// since the last commit. `recheck` is CometBFT re-checking a transaction it accepted
    /// before a block: the bytes, and so the signature, are unchanged, so only the stateful
    /// checks run again (as the Cosmos SDK's ante handler does on recheck).
    fn check_tx(&self, raw: &[u8], recheck: bool) -> TxResult {
        let mut results = self.check_txs(&[(raw, recheck)]);
        results
            .pop()
            .unwrap_or_else(|| halt("CheckTx", "no result for one transaction"))
    }

    /// CheckTx for several transactions in the order CometBFT sent them, `(bytes, recheck)`
    /// each: the same results as one call each, with the signatures checked in one batch
    /// (the rule's batch decides exactly what single checks would).
    pub fn check_txs(&self, txs: &[(&[u8], bool)]) -> Vec<TxResult> {
        // Decoding and the signatures need no state, so they run before the lock is taken:
        // CheckTx verifying signatures does not hold up FinalizeBlock or Commit.
        let decoded: Vec<Result<Tx, TxError>> =
            txs.iter().map(|(raw, _)| Tx::decode(raw)).collect();
        // A re-check's bytes, and so its signature, are the ones checked before.
        let rechecks: Vec<bool> = txs.iter().map(|(_, recheck)| *recheck).collect();
        let signatures_ok = execute::signature_verdicts(&decoded, &rechecks);
        let node = self.read();
        let (chain_id, params) = execute::chain_settings(&node.store);
        // No transaction's validity depends on the block's time; the last block's stands in.
        let ctx = BlockCtx {
            height: node.store.height().saturating_add(1),
            chain_id,
            entropy: [0; 32],
            time_ms: node.last_block_time_ms,
        };
        let mut check_writes = self.check_writes();
        let results: Vec<TxResult> = txs
            .iter()
            .zip(decoded.iter().zip(signatures_ok))
            .map(|((raw, _), (tx, sig_ok))| {
                let mut top = Write::new();
                let result = {
                    let accepted = layered::Layered {
                        top: &check_writes,
                        base: &node.store,
                    };
                    execute::run_tx(&accepted, &mut top, &ctx, &params, raw, tx.as_ref(), sig_ok)
                };
                if result.code == 0 {
                    check_writes.extend(top);
                }
                result
            })
            .collect();
        drop(check_writes);
        drop(node);
        // Only what enters the mempool can land in a block: a flood of validly signed but
        // refused transactions (stale nonces) does not push the admitted ones' verdicts out.
        self.known_signatures.remember(
            txs.iter()
                .zip(&results)
                .filter(|((_, recheck), result)| !recheck && result.code == 0)
                .map(|((raw, _), _)| *raw),
        );
        results
    }

    /// ABCI CheckTx for requests CometBFT sent one after the other, answered in their order
    /// as one [`App::check_txs`].
    pub fn check_tx_requests(&self, requests: &[RequestCheckTx]) -> Vec<ResponseCheckTx> {
        let txs: Vec<(&[u8], bool)> = requests
            .iter()
            .map(|r| (r.tx.as_ref(), r.r#type == CheckTxKind::Recheck as i32))
            .collect();
        self.check_txs(&txs)
            .into_iter()
            .map(convert::check_tx_response)
            .collect()
    }
}

impl tendermint_abci::Application for App {
    fn info(&self, _req: RequestInfo) -> ResponseInfo {
        let (height, app_hash) = self.committed();
        ResponseInfo {
            data: "gpuchain".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            app_version: 1,
            last_block_height: i64::try_from(height).unwrap_or(i64::MAX),
            last_block_app_hash: if height == 0 {
                Default::default()
            } else {
                app_hash.to_vec().into()
            },
        }
    }

    fn init_chain(&self, req: RequestInitChain) -> ResponseInitChain {
        let initial_height = u64::try_from(req.initial_height.max(1))
            .unwrap_or_else(|e| halt("invalid initial_height", e));
        let genesis = AppGenesis::from_json(&req.app_state_bytes)
            .unwrap_or_else(|e| halt("invalid app_state in genesis.json", e));
        let (root, validators) = self
            .init_chain_at(&req.chain_id, initial_height, &genesis)
            .unwrap_or_else(|e| halt("applying genesis", e));
        tracing::info!(chain_id = %req.chain_id, app_hash = %hex::encode(root), validators = validators.len(), "genesis applied");
        ResponseInitChain {
            app_hash: root.to_vec().into(),
            validators: validators.iter().map(convert::validator_update).collect(),
            ..Default::default()
        }
    }

    fn query(&self, req: RequestQuery) -> ResponseQuery {
        let node = self.read();
        query::query(&node.store, &req)
    }

    fn check_tx(&self, req: RequestCheckTx) -> ResponseCheckTx {
        let recheck = req.r#type == CheckTxKind::Recheck as i32;
        convert::check_tx_response(self.check_tx(&req.tx, recheck))
    }

    fn prepare_proposal(&self, req: RequestPrepareProposal) -> ResponsePrepareProposal {
        let node = self.read();
        let (_, params) = execute::chain_settings(&node.store);
        ResponsePrepareProposal {
            txs: convert::select_txs(req.txs, req.max_tx_bytes, &params),
        }
    }

    fn process_proposal(&self, req: RequestProcessProposal) -> ResponseProcessProposal {
        let node = self.read();
        let (_, params) = execute::chain_settings(&node.store);
        convert::process_proposal(&req.txs, &params)
    }

    fn finalize_block(&self, req: RequestFinalizeBlock) -> ResponseFinalizeBlock {
        let height = u64::try_from(req.height).unwrap_or_else(|e| halt("negative block height", e));
        let txs: Vec<&[u8]> = req.txs.iter().map(|t| t.as_ref()).collect();
        let misbehavior = convert::misbehavior(&req.misbehavior);
        let votes = convert::votes(req.decided_last_commit.as_ref());
        let time_ms = convert::time_ms(req.time.as_ref())
            .unwrap_or_else(|e| halt("block time out of range", e));
        let input = BlockInput {
            height,
            hash: &req.hash,
            time_ms,
            txs: &txs,
            misbehavior: &misbehavior,
            votes: &votes,
        };
        let (outcome, app_hash) = self
            .finalize(&input)
            .unwrap_or_else(|e| halt("executing block", e));
        let node = self.read();
        convert::finalize_response(outcome, app_hash, node.event_index.as_ref())
    }

    fn commit(&self) -> ResponseCommit {
        let height = App::commit(self).unwrap_or_else(|e| halt("committing block", e));
        tracing::debug!(height, "committed");
        let retain = App::retain_height(&self.read());
        ResponseCommit {
            retain_height: i64::try_from(retain).unwrap_or(0),
        }
    }

    fn list_snapshots(&self) -> ResponseListSnapshots {
        statesync::list(&self.read())
    }

    fn load_snapshot_chunk(&self, req: RequestLoadSnapshotChunk) -> ResponseLoadSnapshotChunk {
        statesync::load_chunk(&self.read(), &req)
    }

    fn offer_snapshot(&self, req: RequestOfferSnapshot) -> ResponseOfferSnapshot {
        statesync::offer(&mut self.write(), &req)
    }

    fn apply_snapshot_chunk(&self, req: RequestApplySnapshotChunk) -> ResponseApplySnapshotChunk {
        statesync::apply_chunk(&mut self.write(), req)
    }
}

/// The height before whose Commit the process aborts, from `GPUCHAIN_CRASH_BEFORE_COMMIT_AT`:
/// the crash-recovery tests' hook, compiled only with the `test-hooks` feature, which only
/// the end-to-end test crate enables (a node built on its own never reads the variable).
#[cfg(feature = "test-hooks")]
fn crash_before_commit_at() -> Result<Option<u64>> {
    use anyhow::Context as _;
    std::env::var("GPUCHAIN_CRASH_BEFORE_COMMIT_AT")
        .ok()
        .map(|v| {
            v.parse()
                .context("GPUCHAIN_CRASH_BEFORE_COMMIT_AT must be a height")
        })
        .transpose()
}

/// Without the `test-hooks` feature there is no crash hook.
#[cfg(not(feature = "test-hooks"))]
fn crash_before_commit_at() -> Result<Option<u64>> {
    Ok(None)
}
