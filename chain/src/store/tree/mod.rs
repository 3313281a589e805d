//! The state tree's storage and how a block becomes a tree version.
//!
//! The tree is a Jellyfish Merkle Tree: nodes are stored by borsh(`NodeKey`) in the `jmt`
//! crate's own format ([`node`]), so the crate reads them to build proofs, while blocks are
//! applied by [`update`], a batch update built for sorted writes. Values are stored by
//! `key_hash || version (big-endian)` so that "newest value at or below version v" is one
//! reverse seek. The pruning indexes hold one record per version, keyed by the version
//! (big-endian): the stale-node record is the borsh `Vec<NodeKey>` of the nodes that version
//! replaced; the written-value record lists, for each key it wrote, the key hash, the
//! version of the value record the write replaced and whether the write was a deletion
//! (41 bytes an entry). One record per version instead of one per entry keeps a block's
//! commit batch small; pruning is a forward scan that deletes exactly the records named,
//! without reading the values. A leaf's version is always that of its key's newest value
//! record (a leaf the update moves gets its value copied to the new version), which is
//! how the update knows what each write replaced.
//!
//! The state after block `h` is tree version `h` (genesis is version 0): inserts, updates
//! and deletions alike, applied as one sorted batch.

mod node;
mod update;

use std::collections::BTreeMap;

use anyhow::{anyhow, Result};
use gpuchain_types::{key_hash, Write};
use jmt::storage::{LeafNode as JmtLeaf, Node, NodeKey, TreeReader};
use jmt::{KeyHash, OwnedValue, Version};
use rocksdb::{WriteBatch, DB};

use super::cache::Caches;
use super::{cf, CF_DELETED, CF_NODES, CF_STALE, CF_VALUES, CF_WRITTEN};
pub(super) use node::{NodeAddr, StoredNode};
use update::{apply_version, Change, NodeSource, Written};

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
fn encode_value(value: Option<&[u8]>) -> Vec<u8> {
    match value {
        None => vec![0],
        Some(v) => {
            let mut out = Vec::with_capacity(v.len().saturating_add(1));
            out.push(1);
            out.extend_from_slice(v);
            out
        }
    }
}

/// The inverse of [`encode_value`].
fn decode_value(bytes: &[u8]) -> Result<Option<OwnedValue>> {
    match bytes.split_first() {
        Some((1, value)) => Ok(Some(value.to_vec())),
        Some((0, _)) => Ok(None),
        _ => Err(anyhow!("corrupt tree value encoding")),
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
        (Some(k), Some(v)) if k.len() == 40 && k.get(..32) == Some(&key_hash.0[..]) => {
            decode_value(v)
        }
        _ => Ok(None),
    }
}

/// A block's tree versions, hashed but not yet written.
pub(super) struct TreeUpdate {
    pub(super) root: [u8; 32],
    pub(super) nodes: BTreeMap<NodeAddr, StoredNode>,
    stale: Vec<(Version, Vec<NodeAddr>)>,
    values: Vec<VersionValues>,
}

/// One version's value records and what they make prunable.
struct VersionValues {
    version: Version,
    /// Each key the version wrote, in the order of its `Write`, with the version of the
    /// value record the write replaced (the key's old leaf's version), if any.
    written: Vec<(KeyHash, Option<Version>)>,
    /// Leaves the version moved without changing them: key, the version they moved from,
    /// and the value, copied to the new version so that a leaf's version always names its
    /// key's newest value record.
    moved: Vec<(KeyHash, Version, Vec<u8>)>,
}

/// A written-value record entry: key hash, replaced version (big-endian, `NO_VERSION` for
/// none), and whether the write was a deletion.
const ENTRY_LEN: usize = 32 + 8 + 1;
const NO_VERSION: Version = Version::MAX;

fn push_entry(record: &mut Vec<u8>, key_hash: &KeyHash, replaced: Option<Version>, deleted: bool) {
    record.extend_from_slice(&key_hash.0);
    record.extend_from_slice(&replaced.unwrap_or(NO_VERSION).to_be_bytes());
    record.push(u8::from(deleted));
}

/// Adds a block's tree nodes, values and per-version pruning records to `batch`;
/// `writes` are the versions' writes, in the order the tree applied them.
pub(super) fn write_tree_batch(
    db: &DB,
    batch: &mut WriteBatch,
    update: &TreeUpdate,
    writes: &[Write],
) -> Result<()> {
    let node_cf = cf(db, CF_NODES)?;
    let mut key_buf = Vec::with_capacity(64);
    let mut node_buf = Vec::with_capacity(1024);
    for (addr, node) in &update.nodes {
        key_buf.clear();
        node_buf.clear();
        borsh::to_writer(&mut key_buf, addr)?;
        borsh::to_writer(&mut node_buf, node)?;
        batch.put_cf(node_cf, &key_buf, &node_buf);
    }
    let (value_cf, written_cf) = (cf(db, CF_VALUES)?, cf(db, CF_WRITTEN)?);
    let deleted_cf = cf(db, CF_DELETED)?;
    anyhow::ensure!(
        writes.len() == update.values.len(),
        "{} write sets for {} tree versions",
        writes.len(),
        update.values.len()
    );
    for (values, writes) in update.values.iter().zip(writes) {
        let version = values.version;
        let entries = values.written.len().saturating_add(values.moved.len());
        let mut record = Vec::with_capacity(entries.saturating_mul(ENTRY_LEN));
        for ((key_hash, replaced), (_, value)) in values.written.iter().zip(writes) {
            batch.put_cf(
                value_cf,
                value_key(*key_hash, version),
                encode_value(value.as_deref()),
            );
            push_entry(&mut record, key_hash, *replaced, value.is_none());
        }
        for (key_hash, from, value) in &values.moved {
            batch.put_cf(
                value_cf,
                value_key(*key_hash, version),
                encode_value(Some(value)),
            );
            push_entry(&mut record, key_hash, Some(*from), false);
        }
        batch.put_cf(written_cf, version.to_be_bytes(), record);
        for (key, _) in writes.iter().filter(|(_, value)| value.is_none()) {
            batch.put_cf(deleted_cf, deleted_key(version, key), []);
        }
    }
    let stale_cf = cf(db, CF_STALE)?;
    for (version, addrs) in &update.stale {
        batch.put_cf(stale_cf, version.to_be_bytes(), borsh::to_vec(addrs)?);
    }
    Ok(())
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
    prune_values(db, batch, from, through)?;
    // A deletion at or before `through` is never needed again: the keys a readable height
    // held that the latest state lacks were all deleted after it.
    let start = from.and_then(|v| v.checked_add(1)).unwrap_or(0);
    if let Some(end) = through.checked_add(1) {
        batch.delete_range_cf(cf(db, CF_DELETED)?, start.to_be_bytes(), end.to_be_bytes());
    }
    Ok(())
}

/// The deleted-key record of `key` at `version`: the version first (big-endian), so one
/// range holds every key a span of versions deleted. Only these names are kept: a key the
/// latest state lacks can then still be listed at an older height it existed at.
fn deleted_key(version: Version, key: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len().saturating_add(8));
    out.extend_from_slice(&version.to_be_bytes());
    out.extend_from_slice(key.as_bytes());
    out
}

/// The keys that versions after `after` deleted (with repeats).
pub(super) fn deleted_after(db: &DB, after: Version) -> Result<Vec<String>> {
    let deleted = cf(db, CF_DELETED)?;
    let mut iter = db.raw_iterator_cf(deleted);
    let Some(start) = after.checked_add(1) else {
        return Ok(Vec::new());
    };
    iter.seek(start.to_be_bytes());
    let mut keys = Vec::new();
    while let Some(record) = iter.key() {
        let key = record
            .get(8..)
            .ok_or_else(|| anyhow!("corrupt deleted-key record"))?;
        keys.push(String::from_utf8(key.to_vec())?);
        iter.next();
    }
    iter.status()?;
    Ok(keys)
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
        let addrs: Vec<NodeAddr> = borsh::from_slice(record)?;
        for addr in addrs {
            batch.delete_cf(node_cf, borsh::to_vec(&addr)?);
        }
        Ok(())
    })
}

/// For each key written at a version `v` in `(from, through]`, deletes the value record
/// that write replaced (named in the record, so nothing is read): every version from
/// `through` on reads `v` or newer. Each value is deleted once, when the write after it is
/// pruned, so no older one is left. A deletion's own marker goes too: with everything
/// older gone, finding no record reads as the same absence.
fn prune_values(
    db: &DB,
    batch: &mut WriteBatch,
    from: Option<Version>,
    through: Version,
) -> Result<()> {
    let value_cf = cf(db, CF_VALUES)?;
    for_each_record(
        db,
        batch,
        CF_WRITTEN,
        from,
        through,
        |version, record, batch| {
            if record.len() % ENTRY_LEN != 0 {
                return Err(anyhow!("corrupt written-value record at version {version}"));
            }
            for entry in record.chunks_exact(ENTRY_LEN) {
                let (hash, rest) = entry.split_at(32);
                let (replaced, deleted) = rest.split_at(8);
                let key_hash = KeyHash(hash.try_into()?);
                let replaced = Version::from_be_bytes(replaced.try_into()?);
                if replaced != NO_VERSION {
                    batch.delete_cf(value_cf, value_key(key_hash, replaced));
                }
                if deleted == [1] {
                    batch.delete_cf(value_cf, value_key(key_hash, version));
                }
            }
            Ok(())
        },
    )
}

impl NodeSource for TreeDb<'_> {
    /// A committed node, through the cache.
    fn node(&self, addr: &NodeAddr) -> Result<Option<StoredNode>> {
        let epoch = {
            let cache = self.caches.nodes();
            if let Some(node) = cache.node(addr) {
                return Ok(Some(node));
            }
            cache.epoch()
        };
        let nodes = cf(self.db, CF_NODES)?;
        match self.db.get_cf(nodes, borsh::to_vec(addr)?)? {
            Some(bytes) => {
                let node: StoredNode = borsh::from_slice(&bytes)?;
                self.caches.nodes().fill(epoch, *addr, node.clone());
                Ok(Some(node))
            }
            None => Ok(None),
        }
    }
}

/// The `jmt` crate reads the same records to build proofs.
impl TreeReader for TreeDb<'_> {
    fn get_node_option(&self, node_key: &NodeKey) -> Result<Option<Node>> {
        let addr = NodeAddr::from_jmt(node_key)
            .ok_or_else(|| anyhow!("tree node key deeper than a key hash"))?;
        self.node(&addr)?.map(|node| node.to_jmt()).transpose()
    }

    fn get_value_option(
        &self,
        max_version: Version,
        key_hash: KeyHash,
    ) -> Result<Option<OwnedValue>> {
        get_value_at(self.db, key_hash, max_version)
    }

    fn get_rightmost_leaf(&self) -> Result<Option<(NodeKey, JmtLeaf)>> {
        // Only the `jmt` crate's own restore calls this; gpuchain restores a snapshot as one
        // whole version (`Store::restore`).
        Err(anyhow!("the jmt crate's restore is not used"))
    }
}

/// A block's tree update, built one version at a time.
pub(super) struct BlockTree<'a> {
    db: TreeDb<'a>,
    written: Written,
    values: Vec<VersionValues>,
    /// The genesis values and their version, kept while the first block is built on them
    /// in the same batch (a leaf it moves copies its value from here).
    genesis_values: BTreeMap<[u8; 32], Vec<u8>>,
    genesis_version: Option<Version>,
    root: [u8; 32],
}

impl<'a> BlockTree<'a> {
    pub(super) fn new(db: TreeDb<'a>) -> Self {
        BlockTree {
            db,
            written: Written::default(),
            values: Vec::new(),
            genesis_values: BTreeMap::new(),
            genesis_version: None,
            root: [0; 32],
        }
    }

    /// Applies a whole state as `version` on an empty tree: genesis (the version before
    /// the chain's initial height) or a restored snapshot.
    pub(super) fn genesis(mut self, version: Version, writes: &Write) -> Result<Self> {
        self.apply(None, version, writes)?;
        self.genesis_version = Some(version);
        let hashes = self
            .values
            .last()
            .map(|v| v.written.as_slice())
            .unwrap_or_default();
        self.genesis_values = hashes
            .iter()
            .zip(writes.values())
            .filter_map(|((hash, _), v)| v.as_ref().map(|v| (hash.0, v.clone())))
            .collect();
        Ok(self)
    }

    /// Applies block `height`'s writes as version `height` on top of version `height - 1`.
    pub(super) fn block(mut self, height: u64, writes: &Write) -> Result<Self> {
        let base = height
            .checked_sub(1)
            .ok_or_else(|| anyhow!("blocks start at height 1"))?;
        self.apply(Some(base), height, writes)?;
        Ok(self)
    }

    pub(super) fn finish(self) -> TreeUpdate {
        TreeUpdate {
            root: self.root,
            nodes: self.written.nodes,
            stale: self.written.stale,
            values: self.values,
        }
    }

    fn apply(&mut self, base: Option<Version>, version: Version, writes: &Write) -> Result<()> {
        let mut hashes = Vec::with_capacity(writes.len());
        let mut changes: Vec<Change> = Vec::with_capacity(writes.len());
        for (key, value) in writes {
            let hash = key_hash(key);
            let value_hash = value.as_ref().map(|v| *blake3::hash(v).as_bytes());
            changes.push((hash.0, value_hash));
            hashes.push(hash);
        }
        changes.sort_unstable_by_key(|change| change.0);
        let outcome = apply_version(&self.db, &mut self.written, base, version, &changes)?;
        self.root = outcome.root;
        let written = hashes
            .into_iter()
            .map(|hash| (hash, outcome.old_leaves.get(&hash.0).copied()))
            .collect();
        let mut moved = Vec::new();
        let this_version = self.written.nodes.range(NodeAddr::root(version)..);
        for (addr, node) in this_version.take_while(|(addr, _)| addr.version == version) {
            let StoredNode::Leaf(leaf) = node else {
                continue;
            };
            if changes
                .binary_search_by(|c| c.0.cmp(&leaf.key_hash))
                .is_ok()
            {
                continue;
            }
            let from = *outcome
                .old_leaves
                .get(&leaf.key_hash)
                .ok_or_else(|| anyhow!("tree leaf {addr:?} appeared without a write"))?;
            let value = self.value_record(leaf.key_hash, from)?;
            moved.push((KeyHash(leaf.key_hash), from, value));
        }
        self.values.push(VersionValues {
            version,
            written,
            moved,
        });
        Ok(())
    }

    /// The value a leaf written at `version` holds: its key's record at exactly that
    /// version.
    fn value_record(&self, key_hash: [u8; 32], version: Version) -> Result<Vec<u8>> {
        let from_genesis = self.genesis_version == Some(version);
        if let Some(value) = self.genesis_values.get(&key_hash).filter(|_| from_genesis) {
            return Ok(value.clone());
        }
        let values = cf(self.db.db, CF_VALUES)?;
        let record = self
            .db
            .db
            .get_cf(values, value_key(KeyHash(key_hash), version))?
            .ok_or_else(|| anyhow!("no value record at version {version} for a live tree leaf"))?;
        decode_value(&record)?
            .ok_or_else(|| anyhow!("the value record of a live tree leaf is a deletion"))
    }
}

#[cfg(test)]
mod tests;
