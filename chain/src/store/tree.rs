//! The JMT's storage and how a block becomes tree versions.
//!
//! Nodes are stored by borsh(NodeKey); values by `key_hash || version (big-endian)` so that
//! "newest value at or below version v" is one reverse seek. The pruning indexes hold one
//! record per version, keyed by the version (big-endian): the stale-node record is the
//! borsh `Vec<NodeKey>` of the nodes that version replaced, the written-value record the
//! concatenated key hashes it wrote. One record per version instead of one per entry keeps
//! a block's commit batch (and its memtable inserts) small; pruning is a forward scan.
//!
//! The state after block `h` is tree version `2h` (genesis is version 0). Version `2h - 1`
//! holds block `h`'s inserts and updates, applied as one sorted batch that builds and hashes
//! each touched internal node once; version `2h` holds its deletions, applied key by key,
//! because the JMT's batched insertion cannot delete. The tree's shape depends only on its
//! key set, so the root equals the one a key-by-key update of all writes would give.

use anyhow::{anyhow, Result};
use gpuchain_types::{key_hash, Blake3Hasher, Write};
use jmt::storage::{
    LeafNode, NibblePath, Node, NodeBatch, NodeKey, StaleNodeIndex, TreeReader, TreeUpdateBatch,
};
use jmt::{JellyfishMerkleTree, KeyHash, OwnedValue, Version};
use rocksdb::{WriteBatch, DB};

use super::cache::Caches;
use super::{cf, CF_NODES, CF_STALE, CF_VALUES, CF_WRITTEN};

/// The tree version that holds the state after block `height`.
pub(super) fn version_at(height: u64) -> Result<Version> {
    height
        .checked_mul(2)
        .ok_or_else(|| anyhow!("height {height} is past the tree's version range"))
}

/// The committed tree, read through the node cache.
pub(super) struct TreeDb<'a> {
    pub(super) db: &'a DB,
    pub(super) caches: &'a Caches,
}

fn value_key(key_hash: KeyHash, version: Version) -> [u8; 40] {
    let mut out = [0u8; 40];
    out[..32].copy_from_slice(&key_hash.0);
    out[32..].copy_from_slice(&version.to_be_bytes());
    out
}

/// A stored value: `0` for a deletion, `1 || bytes` for a value.
fn encode_value(value: &Option<OwnedValue>) -> Vec<u8> {
    match value {
        None => vec![0],
        Some(v) => {
            let mut out = Vec::with_capacity(v.len() + 1);
            out.push(1);
            out.extend_from_slice(v);
            out
        }
    }
}

pub(super) fn get_value_at(
    db: &DB,
    key_hash: KeyHash,
    max_version: Version,
) -> Result<Option<OwnedValue>> {
    let values = cf(db, CF_VALUES)?;
    let mut iter = db.raw_iterator_cf(values);
    iter.seek_for_prev(value_key(key_hash, max_version));
    iter.status()?;
    match (iter.key(), iter.value()) {
        (Some(k), Some(v)) if k.len() == 40 && k[..32] == key_hash.0 => match v.split_first() {
            Some((1, rest)) => Ok(Some(rest.to_vec())),
            Some((0, _)) => Ok(None),
            _ => Err(anyhow!("corrupt tree value encoding")),
        },
        _ => Ok(None),
    }
}

/// Adds a block's tree nodes, values and per-version pruning records to `batch`.
pub(super) fn write_tree_batch(
    db: &DB,
    batch: &mut WriteBatch,
    update: &TreeUpdateBatch,
) -> Result<()> {
    let node_cf = cf(db, CF_NODES)?;
    let mut key_buf = Vec::with_capacity(64);
    let mut node_buf = Vec::with_capacity(1024);
    for (key, node) in update.node_batch.nodes() {
        key_buf.clear();
        node_buf.clear();
        borsh::to_writer(&mut key_buf, key)?;
        borsh::to_writer(&mut node_buf, node)?;
        batch.put_cf(node_cf, &key_buf, &node_buf);
    }
    let (value_cf, written_cf) = (cf(db, CF_VALUES)?, cf(db, CF_WRITTEN)?);
    for ((version, key_hash), value) in update.node_batch.values() {
        batch.put_cf(
            value_cf,
            value_key(*key_hash, *version),
            encode_value(value),
        );
    }
    let written = update.node_batch.values().keys().map(|(v, k)| (*v, k));
    for (version, hashes) in by_version(written) {
        let record: Vec<u8> = hashes.iter().flat_map(|h| h.0).collect();
        batch.put_cf(written_cf, version.to_be_bytes(), record);
    }
    let stale_cf = cf(db, CF_STALE)?;
    let stale = update
        .stale_node_index_batch
        .iter()
        .map(|index| (index.stale_since_version, &index.node_key));
    for (version, keys) in by_version(stale) {
        batch.put_cf(stale_cf, version.to_be_bytes(), borsh::to_vec(&keys)?);
    }
    Ok(())
}

/// Groups items that arrive ordered by version (the node batch and the stale index are
/// ordered maps) into one list per version: one pruning record each.
fn by_version<T>(items: impl Iterator<Item = (Version, T)>) -> Vec<(Version, Vec<T>)> {
    let mut groups: Vec<(Version, Vec<T>)> = Vec::new();
    for (version, item) in items {
        match groups.last_mut() {
            Some((v, group)) if *v == version => group.push(item),
            _ => groups.push((version, vec![item])),
        }
    }
    groups
}

/// Adds to `batch` the deletion of what no version from `through` on can read: nodes that
/// went stale after version `from` and at or before `through`, and every value a version in
/// that range overwrote. Starting at `from` (the previous call's `through`) skips the
/// deletion markers earlier calls left behind.
pub(super) fn prune(
    db: &DB,
    batch: &mut WriteBatch,
    from: Option<Version>,
    through: Version,
) -> Result<()> {
    prune_nodes(db, batch, from, through)?;
    prune_values(db, batch, from, through)
}

/// Calls `f` with each record of an index column family whose version is in
/// `(from, through]`, then adds the record's deletion to `batch`.
fn for_each_record(
    db: &DB,
    batch: &mut WriteBatch,
    index_cf: &str,
    from: Option<Version>,
    through: Version,
    mut f: impl FnMut(Version, &[u8], &mut WriteBatch) -> Result<()>,
) -> Result<()> {
    let index = cf(db, index_cf)?;
    let mut iter = db.raw_iterator_cf(index);
    match from.and_then(|v| v.checked_add(1)) {
        Some(start) => iter.seek(start.to_be_bytes()),
        None => iter.seek_to_first(),
    }
    while let (Some(key), Some(record)) = (iter.key(), iter.value()) {
        let version = Version::from_be_bytes(
            key.try_into()
                .map_err(|_| anyhow!("corrupt {index_cf} record key"))?,
        );
        if version > through {
            break;
        }
        f(version, record, batch)?;
        batch.delete_cf(index, key);
        iter.next();
    }
    iter.status()?;
    Ok(())
}

fn prune_nodes(
    db: &DB,
    batch: &mut WriteBatch,
    from: Option<Version>,
    through: Version,
) -> Result<()> {
    let node_cf = cf(db, CF_NODES)?;
    for_each_record(db, batch, CF_STALE, from, through, |_, record, batch| {
        let keys: Vec<NodeKey> = borsh::from_slice(record)?;
        for key in keys {
            batch.delete_cf(node_cf, borsh::to_vec(&key)?);
        }
        Ok(())
    })
}

/// For each key written at a version `v` in `(from, through]`, deletes the value that write
/// replaced: every version from `through` on reads `v` or newer. Each value is deleted once,
/// when the write after it is pruned, so no older one is left.
fn prune_values(
    db: &DB,
    batch: &mut WriteBatch,
    from: Option<Version>,
    through: Version,
) -> Result<()> {
    let value_cf = cf(db, CF_VALUES)?;
    let mut values = db.raw_iterator_cf(value_cf);
    for_each_record(
        db,
        batch,
        CF_WRITTEN,
        from,
        through,
        |version, record, batch| {
            if record.len() % 32 != 0 {
                return Err(anyhow!("corrupt written-value record at version {version}"));
            }
            let Some(before) = version.checked_sub(1) else {
                return Ok(());
            };
            for hash in record.chunks_exact(32) {
                // The value this write replaced is the newest one before it. Seeking backwards
                // lands on it directly; a forward scan from the key's start would wade through
                // the deletion markers of every earlier prune of the same key.
                let key_hash = KeyHash(hash.try_into()?);
                values.seek_for_prev(value_key(key_hash, before));
                values.status()?;
                if let Some(old) = values.key().filter(|k| k.starts_with(hash)) {
                    batch.delete_cf(value_cf, old);
                }
            }
            Ok(())
        },
    )
}

impl TreeReader for TreeDb<'_> {
    fn get_node_option(&self, node_key: &NodeKey) -> Result<Option<Node>> {
        let epoch = {
            let cache = self.caches.nodes();
            if let Some(node) = cache.node(node_key) {
                return Ok(Some(node));
            }
            cache.epoch()
        };
        let nodes = cf(self.db, CF_NODES)?;
        match self.db.get_cf(nodes, borsh::to_vec(node_key)?)? {
            Some(bytes) => {
                let node: Node = borsh::from_slice(&bytes)?;
                self.caches
                    .nodes()
                    .fill(epoch, node_key.clone(), node.clone());
                Ok(Some(node))
            }
            None => Ok(None),
        }
    }

    fn get_value_option(
        &self,
        max_version: Version,
        key_hash: KeyHash,
    ) -> Result<Option<OwnedValue>> {
        get_value_at(self.db, key_hash, max_version)
    }

    fn get_rightmost_leaf(&self) -> Result<Option<(NodeKey, LeafNode)>> {
        // Only JMT's snapshot restore calls this; gpuchain nodes sync by block replay.
        Err(anyhow!(
            "state-sync restore is not supported: sync by replaying blocks"
        ))
    }
}

/// The committed tree with the versions hashed so far in this block on top.
struct PendingTree<'a> {
    db: &'a TreeDb<'a>,
    pending: &'a NodeBatch,
}

impl TreeReader for PendingTree<'_> {
    fn get_node_option(&self, node_key: &NodeKey) -> Result<Option<Node>> {
        match self.pending.get_node(node_key) {
            Some(node) => Ok(Some(node.clone())),
            None => self.db.get_node_option(node_key),
        }
    }

    fn get_value_option(
        &self,
        max_version: Version,
        key_hash: KeyHash,
    ) -> Result<Option<OwnedValue>> {
        let newest_pending = self
            .pending
            .values()
            .iter()
            .rev()
            .find(|((version, key), _)| *version <= max_version && *key == key_hash);
        match newest_pending {
            Some((_, value)) => Ok(value.clone()),
            None => self.db.get_value_option(max_version, key_hash),
        }
    }

    fn get_rightmost_leaf(&self) -> Result<Option<(NodeKey, LeafNode)>> {
        self.db.get_rightmost_leaf()
    }
}

/// A block's tree update, built one version at a time.
pub(super) struct BlockTree<'a> {
    db: TreeDb<'a>,
    update: TreeUpdateBatch,
    root: [u8; 32],
}

impl<'a> BlockTree<'a> {
    pub(super) fn new(db: TreeDb<'a>) -> Self {
        BlockTree {
            db,
            update: TreeUpdateBatch::default(),
            root: [0; 32],
        }
    }

    /// Applies the genesis writes as version 0.
    pub(super) fn genesis(mut self, writes: &Write) -> Result<Self> {
        // Nothing precedes genesis, so its deletions (if any) delete nothing.
        self.apply(0, Change::Upserts(upserts(writes)))?;
        Ok(self)
    }

    /// Applies block `height`'s writes as versions `2h - 1` (upserts) and `2h` (deletions).
    pub(super) fn block(mut self, height: u64, writes: &Write) -> Result<Self> {
        let version = version_at(height)?;
        let upsert_version = version
            .checked_sub(1)
            .ok_or_else(|| anyhow!("blocks start at height 1"))?;
        self.apply(upsert_version, Change::Upserts(upserts(writes)))?;
        let deletions = writes
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| key_hash(k))
            .collect();
        self.apply(version, Change::Deletions(deletions))?;
        Ok(self)
    }

    pub(super) fn finish(self) -> ([u8; 32], TreeUpdateBatch) {
        (self.root, self.update)
    }

    fn apply(&mut self, version: Version, change: Change) -> Result<()> {
        let reader = PendingTree {
            db: &self.db,
            pending: &self.update.node_batch,
        };
        let tree = JellyfishMerkleTree::<_, Blake3Hasher>::new(&reader);
        let (roots, update) = match change {
            Change::Upserts(set) if !set.is_empty() => {
                tree.batch_put_value_sets(vec![set], None, version)?
            }
            // The batched insert refuses an empty set; an empty version copies the root.
            Change::Upserts(_) => tree.put_value_sets([Vec::new()], version)?,
            Change::Deletions(keys) => {
                tree.put_value_sets([keys.into_iter().map(|k| (k, None))], version)?
            }
        };
        self.root = roots
            .last()
            .ok_or_else(|| anyhow!("tree returned no root for version {version}"))?
            .0;
        if update.stale_node_index_batch.is_empty() && version > 0 {
            // Nothing changed, so the JMT copied the previous root to this version; the old
            // copy is reachable only as the previous version's root.
            self.update.stale_node_index_batch.insert(StaleNodeIndex {
                stale_since_version: version,
                node_key: NodeKey::new(version - 1, NibblePath::from_iter(std::iter::empty())),
            });
        }
        // Merging inserts entry by entry; the first version of a block merges into nothing.
        if self.update.node_batch.is_empty() {
            self.update.node_batch = update.node_batch;
        } else {
            self.update.node_batch.merge(update.node_batch);
        }
        if self.update.stale_node_index_batch.is_empty() {
            self.update.stale_node_index_batch = update.stale_node_index_batch;
        } else {
            self.update
                .stale_node_index_batch
                .extend(update.stale_node_index_batch);
        }
        self.update.node_stats.extend(update.node_stats);
        Ok(())
    }
}

/// What one tree version of a block holds.
enum Change {
    /// Inserts and updates, applied as one sorted batch.
    Upserts(Vec<(KeyHash, OwnedValue)>),
    /// Deletions, applied key by key.
    Deletions(Vec<KeyHash>),
}

fn upserts(writes: &Write) -> Vec<(KeyHash, OwnedValue)> {
    writes
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (key_hash(k), v.clone())))
        .collect()
}
