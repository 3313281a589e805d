//! RocksDB-backed state. Column families:
//! - `latest`: every live state key → its current value (prefix scans, fast reads);
//! - `jmt_nodes`, `jmt_values`: the Jellyfish Merkle Tree whose root is the app hash (block
//!   `h` is version `h`, see [`tree`]), with its values by version for old-height queries;
//! - `jmt_stale`, `jmt_written`: which tree nodes each version replaced and which keys it
//!   wrote, so that what only heights older than the window can read is deleted;
//! - `deleted_keys`: the names of the keys each version deleted, so that the whole state of a
//!   readable older height can be listed (export);
//! - `meta`: last committed height and app hash.
//!
//! A block's writes, tree nodes and meta go to disk in one atomic `WriteBatch` at Commit, so
//! a kill -9 at any instant leaves either the previous block or this one, never a mix.

mod cache;
pub mod snapshot;
mod tree;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use gpuchain_types::{key_hash, Blake3Hasher, StateRead, Write};
use jmt::proof::SparseMerkleProof;
use jmt::JellyfishMerkleTree;
use rocksdb::{ColumnFamilyDescriptor, Direction, IteratorMode, Options, WriteBatch, DB};

use cache::Caches;
use tree::{BlockTree, TreeDb, TreeUpdate};

const CF_LATEST: &str = "latest";
const CF_NODES: &str = "jmt_nodes";
const CF_VALUES: &str = "jmt_values";
const CF_STALE: &str = "jmt_stale";
const CF_WRITTEN: &str = "jmt_written";
const CF_DELETED: &str = "deleted_keys";
const CF_META: &str = "meta";
const META_HEIGHT: &[u8] = b"height";
const META_APP_HASH: &[u8] = b"app_hash";
const META_PRUNED_THROUGH: &[u8] = b"pruned_through";

/// A block's changes, hashed into the tree but not yet on disk.
pub struct PreparedBlock {
    /// Height (= tree version).
    pub height: u64,
    /// Root of the tree after the block: the app hash.
    pub app_hash: [u8; 32],
    /// The writes of each tree version the block adds: genesis and then the block's own
    /// for block 1, the block's alone after it.
    writes: Vec<Write>,
    tree: TreeUpdate,
}

/// How many recent heights keep their Merkle proofs when `app.toml` does not say.
pub const DEFAULT_PROOF_HEIGHTS: u64 = 1_000;

/// The committed state.
#[derive(Clone)]
pub struct Store {
    db: Arc<DB>,
    caches: Arc<Caches>,
    height: u64,
    app_hash: [u8; 32],
    /// Tree nodes needed only by heights older than this many are deleted at commit;
    /// `None` keeps every height provable (an archive node).
    proof_heights: Option<u64>,
    /// The tree version pruning has reached: older versions cannot be read.
    pruned_through: Option<u64>,
    /// Size of the last block's write batch.
    last_batch_bytes: usize,
    /// Where each bounded (queue) read last found its first live key: see [`QueueStarts`].
    queue_starts: Arc<QueueStarts>,
}

/// Height-keyed queues are read from their front every block, and every entry read is
/// soon deleted, so the front of a queue is a run of deletion markers that RocksDB must
/// step over one by one until compaction removes them: on a loaded chain that cost grew
/// with every block. A bounded read therefore starts where the previous read of the same
/// prefix found its first live key (or at its end bound if it found none), which no
/// committed key lies before. Writing a key into that gap moves the start back to it, so
/// reads return exactly what a read from the front would; only where RocksDB starts
/// looking changes, never what state says.
#[derive(Default)]
struct QueueStarts {
    starts: std::sync::Mutex<BTreeMap<String, Vec<u8>>>,
}

impl QueueStarts {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Vec<u8>>> {
        self.starts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `read` from where a read of `prefix` may start and records where the next may:
    /// `read` returns its first key, or `None` when it found nothing before `end`. The lock
    /// is held throughout, so a commit cannot slip a key in between the read and the record.
    fn read<T>(
        &self,
        prefix: &str,
        end: &str,
        read: impl FnOnce(&[u8]) -> (T, Option<Vec<u8>>),
    ) -> T {
        let mut starts = self.lock();
        let start = starts
            .get(prefix)
            .filter(|start| start.as_slice() > prefix.as_bytes())
            .cloned()
            .unwrap_or_else(|| prefix.as_bytes().to_vec());
        let (out, first) = read(&start);
        let next = first.unwrap_or_else(|| end.as_bytes().to_vec().max(start));
        starts.insert(prefix.to_string(), next);
        out
    }

    /// `keys` were committed: a start past one moves back to it.
    fn written<'a>(&self, keys: impl Iterator<Item = &'a str>) {
        let mut starts = self.lock();
        if starts.is_empty() {
            return;
        }
        for key in keys {
            for (prefix, start) in starts.iter_mut() {
                if key.starts_with(prefix.as_str()) && key.as_bytes() < start.as_slice() {
                    *start = key.as_bytes().to_vec();
                }
            }
        }
    }

    fn clear(&self) {
        self.lock().clear();
    }
}

/// A whole state: every key with its value, in key order.
pub type StateEntries = Vec<(String, Vec<u8>)>;

impl Store {
    /// Opens (or creates) the database at `path`.
    pub fn open(path: &Path) -> Result<Store> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        // Seven column families share one write-ahead log, and a log file is kept until every
        // family's memtable holding its writes is flushed; the small ones (meta) fill slowly,
        // so without a cap the log alone grows by hundreds of MiB.
        opts.set_max_total_wal_size(64 << 20);
        let db = DB::open_cf_descriptors(&opts, path, column_families())
            .with_context(|| format!("opening state database at {}", path.display()))?;
        Store::from_db(db)
    }

    /// Opens the database at `path` to read it while a node may be running on it: as a
    /// RocksDB secondary instance (which keeps its own small log in `scratch`), caught up to
    /// the node's last write. Unlike a read-only open it tolerates the node compacting files
    /// away meanwhile.
    pub fn open_reader(path: &Path, scratch: &Path) -> Result<Store> {
        let mut opts = Options::default();
        opts.set_max_open_files(-1);
        let names = column_families().map(|cf| cf.name().to_string());
        let db = DB::open_cf_as_secondary(&opts, path, scratch, names)
            .with_context(|| format!("opening state database at {} to read", path.display()))?;
        db.try_catch_up_with_primary()
            .context("catching up with the node's last write")?;
        Store::from_db(db)
    }

    fn from_db(db: DB) -> Result<Store> {
        let db = Arc::new(db);
        let meta = cf(&db, CF_META)?;
        let height = match db.get_cf(meta, META_HEIGHT)? {
            Some(b) => {
                u64::from_be_bytes(b.as_slice().try_into().map_err(|_| anyhow!("bad height"))?)
            }
            None => 0,
        };
        let app_hash = match db.get_cf(meta, META_APP_HASH)? {
            Some(b) => b
                .as_slice()
                .try_into()
                .map_err(|_| anyhow!("bad app hash"))?,
            None => [0u8; 32],
        };
        let pruned_through = match db.get_cf(meta, META_PRUNED_THROUGH)? {
            Some(b) => Some(u64::from_be_bytes(
                b.as_slice()
                    .try_into()
                    .map_err(|_| anyhow!("bad pruned_through"))?,
            )),
            None => None,
        };
        Ok(Store {
            db,
            caches: Arc::new(Caches::new(cache::CAPACITY)),
            height,
            app_hash,
            proof_heights: Some(DEFAULT_PROOF_HEIGHTS),
            pruned_through,
            last_batch_bytes: 0,
            queue_starts: Arc::default(),
        })
    }

    /// Keeps the state of the last `heights` heights (at least 1) readable and provable, or
    /// of every height with `None`; what only older heights can read is deleted at commit.
    pub fn with_proof_heights(mut self, heights: Option<u64>) -> Store {
        self.proof_heights = heights.map(|h| h.max(1));
        self
    }

    /// The same store with read caches of `capacity` entries (tests use tiny ones so that
    /// entries leave within a block or two).
    #[cfg(test)]
    fn with_cache_capacity(mut self, capacity: usize) -> Store {
        self.caches = Arc::new(Caches::new(capacity));
        self
    }

    /// Last committed height (0 before the first block).
    pub fn height(&self) -> u64 {
        self.height
    }

    /// App hash after the last committed block.
    pub fn app_hash(&self) -> [u8; 32] {
        self.app_hash
    }

    /// The app hash of the genesis state alone (tree version `initial_height - 1`), without
    /// touching the disk.
    pub fn genesis_root(&self, initial_height: u64, genesis: &Write) -> Result<[u8; 32]> {
        let version = genesis_version(initial_height)?;
        Ok(BlockTree::new(self.tree_db())
            .genesis(version, genesis)?
            .finish()
            .root)
    }

    /// Hashes a block's writes into the tree as version `height` without touching the disk.
    /// The chain's first block carries the genesis writes too, which become the version
    /// before it.
    pub fn prepare(
        &self,
        height: u64,
        genesis: Option<Write>,
        writes: Write,
    ) -> Result<PreparedBlock> {
        let tree = BlockTree::new(self.tree_db());
        let (tree, writes) = match genesis {
            Some(genesis) => {
                anyhow::ensure!(
                    self.height == 0,
                    "genesis applied to a store already at height {}",
                    self.height
                );
                // The block's writes start from genesis: only what the block changed goes in
                // its version. Rewriting the unchanged genesis entries would leave every
                // genesis node and value stale at once, all pruned in one later commit.
                let changed: Write = writes
                    .into_iter()
                    .filter(|(key, value)| genesis.get(key) != Some(value))
                    .collect();
                let tree = tree
                    .genesis(genesis_version(height)?, &genesis)?
                    .block(height, &changed)?;
                (tree, vec![genesis, changed])
            }
            None => (tree.block(height, &writes)?, vec![writes]),
        };
        let tree = tree.finish();
        Ok(PreparedBlock {
            height,
            app_hash: tree.root,
            writes,
            tree,
        })
    }

    /// Writes a prepared block, its tree nodes, height and app hash in one atomic batch.
    pub fn commit(&mut self, block: PreparedBlock) -> Result<()> {
        // Sized from the previous block's batch: growing a batch of megabytes step by step
        // copies it several times over.
        let mut batch = WriteBatch::with_capacity_bytes(
            self.last_batch_bytes
                .saturating_add(self.last_batch_bytes / 8),
        );
        let latest = cf(&self.db, CF_LATEST)?;
        for (key, value) in block.writes.iter().flatten() {
            match value {
                Some(v) => batch.put_cf(latest, key.as_bytes(), v),
                None => batch.delete_cf(latest, key.as_bytes()),
            }
        }
        self.queue_starts.written(
            block
                .writes
                .iter()
                .flatten()
                .filter(|(_, value)| value.is_some())
                .map(|(key, _)| key.as_str()),
        );
        tree::write_tree_batch(&self.db, &mut batch, &block.tree, &block.writes)?;
        let mut pruned_through = self.pruned_through;
        if let Some(keep) = self.proof_heights {
            if let Some(newest_dropped) = block.height.checked_sub(keep) {
                let through = newest_dropped.saturating_add(1);
                if pruned_through.is_none_or(|p| p < through) {
                    tree::prune(&self.db, &mut batch, pruned_through, through)?;
                    pruned_through = Some(through);
                }
            }
        }
        let meta = cf(&self.db, CF_META)?;
        batch.put_cf(meta, META_HEIGHT, block.height.to_be_bytes());
        batch.put_cf(meta, META_APP_HASH, block.app_hash);
        if let Some(p) = pruned_through {
            batch.put_cf(meta, META_PRUNED_THROUGH, p.to_be_bytes());
        }
        self.last_batch_bytes = batch.size_in_bytes();
        self.db
            .write(batch)
            .context("writing block to the state database")?;
        // Only now are the block's values and nodes committed, so only now may they be cached.
        let mut versions = block.writes.into_iter();
        let mut writes = versions.next().unwrap_or_default();
        writes.extend(versions.flatten());
        self.caches.committed(writes, block.tree.nodes);
        self.height = block.height;
        self.app_hash = block.app_hash;
        self.pruned_through = pruned_through;
        Ok(())
    }

    /// Every key and value at `height` (the latest or any readable older one), checked
    /// against that height's app hash before it is returned.
    pub fn state_at(&self, height: u64) -> Result<StateEntries> {
        anyhow::ensure!(
            height >= 1 && height <= self.height,
            "height {height} is not committed here: this node is at height {}",
            self.height
        );
        let version = self.readable_version(height)?;
        let latest = self.prefix_raw("");
        let entries = if height == self.height {
            latest
        } else {
            let mut keys: std::collections::BTreeSet<String> =
                latest.into_iter().map(|(k, _)| k).collect();
            keys.extend(tree::deleted_after(&self.db, height)?);
            let mut entries = Vec::with_capacity(keys.len());
            for key in keys {
                if let Some(value) = tree::get_value_at(&self.db, key_hash(&key), version)? {
                    entries.push((key, value));
                }
            }
            entries
        };
        let expected = self.root_at(version)?;
        let (_, tree) = self.whole_state_tree(version, &entries)?;
        let root = tree.root;
        anyhow::ensure!(
            root == expected,
            "the state listed at height {height} hashes to {} but the tree's root there is {}",
            hex::encode(root),
            hex::encode(expected)
        );
        Ok(entries)
    }

    /// Writes a whole state (a snapshot) as `height` into an empty store, if it hashes to
    /// `app_hash`; heights before it are reported as pruned.
    pub fn restore(
        &mut self,
        height: u64,
        entries: &StateEntries,
        app_hash: [u8; 32],
    ) -> Result<()> {
        anyhow::ensure!(
            self.height == 0 && self.prefix_raw("").is_empty(),
            "a snapshot is restored only into an empty state; this one is at height {}",
            self.height
        );
        let (writes, tree) = self.whole_state_tree(height, entries)?;
        anyhow::ensure!(writes.len() == entries.len(), "the snapshot repeats a key");
        anyhow::ensure!(
            tree.root == app_hash,
            "the snapshot's state hashes to {}, not to the trusted app hash {}",
            hex::encode(tree.root),
            hex::encode(app_hash)
        );
        let mut batch = WriteBatch::default();
        let latest = cf(&self.db, CF_LATEST)?;
        for (key, value) in entries {
            batch.put_cf(latest, key.as_bytes(), value);
        }
        let writes = vec![writes];
        tree::write_tree_batch(&self.db, &mut batch, &tree, &writes)?;
        let meta = cf(&self.db, CF_META)?;
        batch.put_cf(meta, META_HEIGHT, height.to_be_bytes());
        batch.put_cf(meta, META_APP_HASH, app_hash);
        batch.put_cf(meta, META_PRUNED_THROUGH, height.to_be_bytes());
        self.db.write(batch).context("writing the restored state")?;
        self.queue_starts.clear();
        self.height = height;
        self.app_hash = app_hash;
        self.pruned_through = Some(height);
        Ok(())
    }

    /// A whole state as the writes and tree of one version built on an empty tree, in
    /// memory.
    fn whole_state_tree(
        &self,
        version: u64,
        entries: &StateEntries,
    ) -> Result<(Write, TreeUpdate)> {
        let writes: Write = entries
            .iter()
            .map(|(k, v)| (k.clone(), Some(v.clone())))
            .collect();
        let tree = BlockTree::new(self.tree_db())
            .genesis(version, &writes)?
            .finish();
        Ok((writes, tree))
    }

    /// How many keys the latest state holds and their keys' and values' bytes: the live
    /// state, without history or the tree (one pass over the `latest` column family).
    pub fn live_state_size(&self) -> Result<(u64, u64)> {
        let latest = cf(&self.db, CF_LATEST)?;
        let (mut keys, mut bytes) = (0u64, 0u64);
        for item in self.db.iterator_cf(latest, IteratorMode::Start) {
            let (k, v) = item?;
            keys = keys.saturating_add(1);
            bytes = bytes.saturating_add(k.len().saturating_add(v.len()) as u64);
        }
        Ok((keys, bytes))
    }

    /// The app hash of committed height `version` (its tree root), if it is still readable.
    pub fn root_at(&self, version: u64) -> Result<[u8; 32]> {
        let version = self.readable_version(version)?;
        let db = self.tree_db();
        let tree = JellyfishMerkleTree::<_, Blake3Hasher>::new(&db);
        Ok(tree.get_root_hash(version)?.0)
    }

    /// The value of `key` at `height` with a Merkle proof against that height's app hash.
    pub fn get_with_proof(
        &self,
        key: &str,
        height: u64,
    ) -> Result<(Option<Vec<u8>>, SparseMerkleProof<Blake3Hasher>)> {
        let version = self.readable_version(height)?;
        let db = self.tree_db();
        let tree = JellyfishMerkleTree::<_, Blake3Hasher>::new(&db);
        tree.get_with_proof(key_hash(key), version)
            .with_context(|| format!("no proof for {key} at height {height}"))
    }

    /// The value of `key` at a past `height`.
    pub fn get_at(&self, key: &str, height: u64) -> Result<Option<Vec<u8>>> {
        tree::get_value_at(&self.db, key_hash(key), self.readable_version(height)?)
    }

    fn tree_db(&self) -> TreeDb<'_> {
        TreeDb {
            db: &self.db,
            caches: &self.caches,
        }
    }

    /// The tree version of `height`, if pruning has not deleted it.
    fn readable_version(&self, height: u64) -> Result<u64> {
        match self.pruned_through {
            Some(p) if height < p => anyhow::bail!(
                "height {height} is pruned: this node keeps the state of heights {p} and later \
                 (proof_heights in app.toml)"
            ),
            _ => Ok(height),
        }
    }
}

/// The tree version genesis is: the one before the chain's initial height.
fn genesis_version(initial_height: u64) -> Result<u64> {
    initial_height
        .checked_sub(1)
        .ok_or_else(|| anyhow!("a chain's initial height is at least 1"))
}

fn column_families() -> impl Iterator<Item = ColumnFamilyDescriptor> {
    [
        CF_LATEST, CF_NODES, CF_VALUES, CF_STALE, CF_WRITTEN, CF_DELETED, CF_META,
    ]
    .into_iter()
    .map(|name| {
        let mut opts = Options::default();
        // When the shared log passes its cap every family's memtable is switched at once; with
        // RocksDB's default of two memtables a family whose previous one is still flushing
        // (slower while a snapshot reads the whole state) stops the block's write until it
        // is done: 0.9–1.4 s commits at a million accounts. Four let the write go on.
        opts.set_max_write_buffer_number(4);
        ColumnFamilyDescriptor::new(name, opts)
    })
}

fn cf<'a>(db: &'a DB, name: &str) -> Result<&'a rocksdb::ColumnFamily> {
    db.cf_handle(name)
        .ok_or_else(|| anyhow!("column family {name} missing"))
}

/// Storage faults are not recoverable by a validator: halt rather than diverge.
fn fatal(e: impl std::fmt::Display) -> ! {
    tracing::error!(error = %e, "state database read failed; halting");
    eprintln!("FATAL: state database read failed: {e}");
    std::process::abort()
}

impl StateRead for Store {
    fn get_raw(&self, key: &str) -> Option<Vec<u8>> {
        let epoch = {
            let values = self.caches.values();
            if let Some(value) = values.value(key) {
                return value;
            }
            values.epoch()
        };
        let latest = cf(&self.db, CF_LATEST).unwrap_or_else(|e| fatal(e));
        let value = self
            .db
            .get_cf(latest, key.as_bytes())
            .unwrap_or_else(|e| fatal(e));
        self.caches
            .values()
            .fill(epoch, key.to_string(), value.clone());
        value
    }

    fn prefix_raw(&self, prefix: &str) -> Vec<(String, Vec<u8>)> {
        self.scan(prefix, None)
    }

    fn prefix_until_raw(&self, prefix: &str, end: &str) -> Vec<(String, Vec<u8>)> {
        self.queue_starts.read(prefix, end, |start| {
            let entries = self.scan_from(prefix, start, Some(end));
            let first = entries.first().map(|(key, _)| key.as_bytes().to_vec());
            (entries, first)
        })
    }
}

impl Store {
    /// The committed entries under `prefix` (before `end`, if given), in key order.
    fn scan(&self, prefix: &str, end: Option<&str>) -> Vec<(String, Vec<u8>)> {
        self.scan_from(prefix, prefix.as_bytes(), end)
    }

    /// [`Store::scan`], looking from `start` (a key under `prefix` no entry lies before).
    fn scan_from(&self, prefix: &str, start: &[u8], end: Option<&str>) -> Vec<(String, Vec<u8>)> {
        let latest = cf(&self.db, CF_LATEST).unwrap_or_else(|e| fatal(e));
        // The bound tells RocksDB where the read ends. Without it, a read of an empty
        // prefix (an order's bids, most often none) steps on past the prefix over every
        // deletion marker that follows it in key order, looking for the next live key: on
        // a loaded chain, over a queue's whole deleted front, in every such read.
        let mut options = rocksdb::ReadOptions::default();
        let bound = match end {
            Some(end) => end.as_bytes().to_vec(),
            None => prefix_successor(prefix.as_bytes()),
        };
        if !bound.is_empty() {
            options.set_iterate_upper_bound(bound);
        }
        let iter = self.db.iterator_cf_opt(
            latest,
            options,
            IteratorMode::From(start, Direction::Forward),
        );
        let mut out = Vec::new();
        for item in iter {
            let (k, v) = item.unwrap_or_else(|e| fatal(e));
            if !k.starts_with(prefix.as_bytes()) || end.is_some_and(|end| *k >= *end.as_bytes()) {
                break;
            }
            let key = String::from_utf8(k.to_vec()).unwrap_or_else(|e| fatal(e));
            out.push((key, v.to_vec()));
        }
        out
    }
}

/// The least key above every key that starts with `prefix`; empty when there is none (the
/// empty prefix, or one of 0xff bytes only).
fn prefix_successor(prefix: &[u8]) -> Vec<u8> {
    let mut bound = prefix.to_vec();
    while let Some(last) = bound.pop() {
        if let Some(next) = last.checked_add(1) {
            bound.push(next);
            return bound;
        }
    }
    bound
}

#[cfg(test)]
mod tests;
