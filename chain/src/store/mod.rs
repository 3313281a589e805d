//! RocksDB-backed state. Column families:
//! - `latest`: every live state key → its current value (prefix scans, fast reads);
//! - `jmt_nodes`, `jmt_values`: the Jellyfish Merkle Tree (versions = block heights) whose
//!   root is the app hash, with every historical value for proofs and old-height queries;
//! - `meta`: last committed height and app hash.
//!
//! A block's writes, tree nodes and meta go to disk in one atomic `WriteBatch` at Commit, so
//! a kill -9 at any instant leaves either the previous block or this one, never a mix.

mod tree;

use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use gpuchain_types::{key_hash, Blake3Hasher, StateRead, Write};
use jmt::proof::SparseMerkleProof;
use jmt::storage::TreeUpdateBatch;
use jmt::JellyfishMerkleTree;
use rocksdb::{ColumnFamilyDescriptor, Direction, IteratorMode, Options, WriteBatch, DB};

use tree::TreeDb;

const CF_LATEST: &str = "latest";
const CF_NODES: &str = "jmt_nodes";
const CF_VALUES: &str = "jmt_values";
const CF_META: &str = "meta";
const META_HEIGHT: &[u8] = b"height";
const META_APP_HASH: &[u8] = b"app_hash";

/// A block's changes, hashed into the tree but not yet on disk.
pub struct PreparedBlock {
    /// Height (= tree version).
    pub height: u64,
    /// Root of the tree after the block: the app hash.
    pub app_hash: [u8; 32],
    writes: Write,
    tree_batch: TreeUpdateBatch,
}

/// The committed state.
#[derive(Clone)]
pub struct Store {
    db: Arc<DB>,
    height: u64,
    app_hash: [u8; 32],
}

impl Store {
    /// Opens (or creates) the database at `path`.
    pub fn open(path: &Path) -> Result<Store> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        let cfs = [CF_LATEST, CF_NODES, CF_VALUES, CF_META]
            .into_iter()
            .map(|name| ColumnFamilyDescriptor::new(name, Options::default()));
        let db = DB::open_cf_descriptors(&opts, path, cfs)
            .with_context(|| format!("opening state database at {}", path.display()))?;
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
        Ok(Store {
            db,
            height,
            app_hash,
        })
    }

    /// Last committed height (0 before the first block).
    pub fn height(&self) -> u64 {
        self.height
    }

    /// App hash after the last committed block.
    pub fn app_hash(&self) -> [u8; 32] {
        self.app_hash
    }

    /// The app hash of the genesis state alone (tree version 0), without touching the disk.
    pub fn genesis_root(&self, genesis: &Write) -> Result<[u8; 32]> {
        let db = TreeDb(&self.db);
        let tree = JellyfishMerkleTree::<_, Blake3Hasher>::new(&db);
        let value_set = genesis.iter().map(|(k, v)| (key_hash(k), v.clone()));
        Ok(tree.put_value_set(value_set, 0)?.0 .0)
    }

    /// Hashes a block's writes into the tree as version `height` without touching the disk.
    /// The first block carries the genesis writes too, which become version 0.
    pub fn prepare(
        &self,
        height: u64,
        genesis: Option<Write>,
        writes: Write,
    ) -> Result<PreparedBlock> {
        let db = TreeDb(&self.db);
        let tree = JellyfishMerkleTree::<_, Blake3Hasher>::new(&db);
        let as_set = |w: &Write| {
            w.iter()
                .map(|(k, v)| (key_hash(k), v.clone()))
                .collect::<Vec<_>>()
        };
        let (root, tree_batch, writes) = match genesis {
            Some(mut genesis) => {
                anyhow::ensure!(
                    height == 1,
                    "genesis must be followed by block 1, got {height}"
                );
                let (roots, batch) =
                    tree.put_value_sets(vec![as_set(&genesis), as_set(&writes)], 0)?;
                let root = *roots
                    .last()
                    .ok_or_else(|| anyhow!("tree returned no root"))?;
                genesis.extend(writes);
                (root, batch, genesis)
            }
            None => {
                let (root, batch) = tree.put_value_set(as_set(&writes), height)?;
                (root, batch, writes)
            }
        };
        Ok(PreparedBlock {
            height,
            app_hash: root.0,
            writes,
            tree_batch,
        })
    }

    /// Writes a prepared block, its tree nodes, height and app hash in one atomic batch.
    pub fn commit(&mut self, block: PreparedBlock) -> Result<()> {
        let mut batch = WriteBatch::default();
        let latest = cf(&self.db, CF_LATEST)?;
        for (key, value) in &block.writes {
            match value {
                Some(v) => batch.put_cf(latest, key.as_bytes(), v),
                None => batch.delete_cf(latest, key.as_bytes()),
            }
        }
        tree::write_tree_batch(&self.db, &mut batch, &block.tree_batch.node_batch)?;
        let meta = cf(&self.db, CF_META)?;
        batch.put_cf(meta, META_HEIGHT, block.height.to_be_bytes());
        batch.put_cf(meta, META_APP_HASH, block.app_hash);
        self.db
            .write(batch)
            .context("writing block to the state database")?;
        self.height = block.height;
        self.app_hash = block.app_hash;
        Ok(())
    }

    /// The value of `key` at `height` with a Merkle proof against that height's app hash.
    pub fn get_with_proof(
        &self,
        key: &str,
        height: u64,
    ) -> Result<(Option<Vec<u8>>, SparseMerkleProof<Blake3Hasher>)> {
        let db = TreeDb(&self.db);
        let tree = JellyfishMerkleTree::<_, Blake3Hasher>::new(&db);
        tree.get_with_proof(key_hash(key), height)
    }

    /// The value of `key` at a past `height`.
    pub fn get_at(&self, key: &str, height: u64) -> Result<Option<Vec<u8>>> {
        tree::get_value_at(&self.db, key_hash(key), height)
    }
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
        let latest = cf(&self.db, CF_LATEST).unwrap_or_else(|e| fatal(e));
        self.db
            .get_cf(latest, key.as_bytes())
            .unwrap_or_else(|e| fatal(e))
    }

    fn prefix_raw(&self, prefix: &str) -> Vec<(String, Vec<u8>)> {
        let latest = cf(&self.db, CF_LATEST).unwrap_or_else(|e| fatal(e));
        let iter = self.db.iterator_cf(
            latest,
            IteratorMode::From(prefix.as_bytes(), Direction::Forward),
        );
        let mut out = Vec::new();
        for item in iter {
            let (k, v) = item.unwrap_or_else(|e| fatal(e));
            if !k.starts_with(prefix.as_bytes()) {
                break;
            }
            let key = String::from_utf8(k.to_vec()).unwrap_or_else(|e| fatal(e));
            out.push((key, v.to_vec()));
        }
        out
    }
}
