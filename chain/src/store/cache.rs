//! Bounded read caches in front of RocksDB: the latest value of each recently used state
//! key, and recently used tree nodes. Both hold only committed data, so they never change a
//! result, only how fast it comes: a block's reads of the accounts and tree paths that the
//! previous blocks touched skip RocksDB's memtable and block lookups and the decoding.
//!
//! Each cache keeps the last few committed blocks' own write maps (moved in at commit, so
//! caching a block costs nothing) plus the values read from disk since a block last left.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

use gpuchain_types::Write;

use super::tree::{NodeAddr, StoredNode};

/// Entries (written or read) a cache holds before its oldest block leaves: a few blocks of
/// 5,000 transfers, about 10 MB per cache.
pub(super) const CAPACITY: usize = 64 * 1024;

/// Blocks a cache keeps at most, however few entries they wrote. A key looked up that no
/// block wrote and no disk read cached is searched for in every block kept: with small
/// blocks (an idle chain, or 100 senders' transfers) the entry capacity alone kept
/// hundreds to thousands of them, and values written once at genesis (the chain id, the
/// transaction parameters every CheckTx reads) were found only after a walk through all of
/// them, which grew with the chain's age. Beyond this many blocks such a key is read from
/// disk once and kept with the reads.
pub(super) const MAX_BLOCKS: usize = 8;

/// Recent committed blocks' maps `B`, newest last, and the entries read from disk
/// (`misses`). A committed block's keys are removed from `misses`, so an entry there is
/// always current and is looked up first: keys read every block but rarely written (module
/// parameters) then cost one lookup in a small map.
pub(super) struct Recent<B, K: Ord, V> {
    blocks: VecDeque<(B, usize)>,
    in_blocks: usize,
    misses: BTreeMap<K, V>,
    /// Bumped at every commit: a disk read that started before a commit is not cached.
    epoch: u64,
    capacity: usize,
}

impl<B, K: Ord, V: Clone> Recent<B, K, V> {
    fn new(capacity: usize) -> Self {
        Recent {
            blocks: VecDeque::new(),
            in_blocks: 0,
            misses: BTreeMap::new(),
            epoch: 0,
            capacity: capacity.max(1),
        }
    }

    fn get<Q>(&self, key: &Q, find: impl Fn(&B, &Q) -> Option<V>) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.misses.get(key).cloned().or_else(|| {
            self.blocks
                .iter()
                .rev()
                .find_map(|(block, _)| find(block, key))
        })
    }

    /// The epoch to pass to [`Recent::fill`] for a disk read about to start.
    pub(super) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Caches `value`, read from disk in `epoch`, unless a block was committed since.
    pub(super) fn fill(&mut self, epoch: u64, key: K, value: V) {
        if epoch != self.epoch {
            return;
        }
        if self.misses.len() >= self.capacity {
            self.misses.clear();
        }
        self.misses.insert(key, value);
    }

    /// Drops the disk reads of keys a block about to be pushed has written: only a key that
    /// can have been read from disk before needs to be named.
    fn forget<'k, Q>(&mut self, written: impl Iterator<Item = &'k Q>)
    where
        K: std::borrow::Borrow<Q>,
        Q: Ord + ?Sized + 'k,
    {
        if !self.misses.is_empty() {
            for key in written {
                self.misses.remove(key);
            }
        }
    }

    /// Adds a just-committed block of `len` entries, retiring the oldest blocks beyond
    /// capacity or beyond [`MAX_BLOCKS`].
    fn push(&mut self, block: B, len: usize) {
        self.epoch = self.epoch.wrapping_add(1);
        self.blocks.push_back((block, len));
        self.in_blocks = self.in_blocks.saturating_add(len);
        while (self.in_blocks > self.capacity || self.blocks.len() > MAX_BLOCKS)
            && self.blocks.len() > 1
        {
            if let Some((_, gone)) = self.blocks.pop_front() {
                self.in_blocks = self.in_blocks.saturating_sub(gone);
            }
        }
    }
}

/// Latest values of state keys, `None` for an absent key.
pub(super) type ValueCache = Recent<Write, String, Option<Vec<u8>>>;
/// Committed tree nodes. A node key names one immutable node, and pruning removes only
/// nodes that no readable version reaches, so a cached node is never wrong.
pub(super) type NodeCache = Recent<BTreeMap<NodeAddr, StoredNode>, NodeAddr, StoredNode>;

impl ValueCache {
    pub(super) fn value(&self, key: &str) -> Option<Option<Vec<u8>>> {
        self.get(key, |block, key| block.get(key).cloned())
    }
}

impl NodeCache {
    pub(super) fn node(&self, key: &NodeAddr) -> Option<StoredNode> {
        self.get(key, |block, key| block.get(key).cloned())
    }
}

/// The store's caches, shared by every clone of a [`super::Store`].
pub(super) struct Caches {
    values: Mutex<ValueCache>,
    nodes: Mutex<NodeCache>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every cache operation leaves the maps consistent before it could panic.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Caches {
    /// Caches of `capacity` entries each.
    pub(super) fn new(capacity: usize) -> Self {
        Caches {
            values: Mutex::new(Recent::new(capacity)),
            nodes: Mutex::new(Recent::new(capacity)),
        }
    }

    pub(super) fn values(&self) -> MutexGuard<'_, ValueCache> {
        lock(&self.values)
    }

    pub(super) fn nodes(&self) -> MutexGuard<'_, NodeCache> {
        lock(&self.nodes)
    }

    /// Takes a committed block's writes and tree nodes.
    pub(super) fn committed(&self, writes: Write, nodes: BTreeMap<NodeAddr, StoredNode>) {
        let mut values = self.values();
        values.forget(writes.keys());
        let len = writes.len();
        values.push(writes, len);
        drop(values);
        // Node keys carry their version, so a committed block never rewrites a cached node.
        let len = nodes.len();
        self.nodes().push(nodes, len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(entries: &[(u64, u64)]) -> BTreeMap<u64, u64> {
        entries.iter().copied().collect()
    }

    fn find(b: &BTreeMap<u64, u64>, k: &u64) -> Option<u64> {
        b.get(k).copied()
    }

    /// What `Caches::committed` does with a block.
    fn commit(cache: &mut Recent<BTreeMap<u64, u64>, u64, u64>, entries: &[(u64, u64)]) {
        let block = block(entries);
        cache.forget(block.keys());
        let len = block.len();
        cache.push(block, len);
    }

    #[test]
    fn the_newest_block_wins_and_old_blocks_leave_beyond_capacity() {
        let mut cache = Recent::<BTreeMap<u64, u64>, u64, u64>::new(4);
        commit(&mut cache, &[(1, 10), (2, 20)]);
        commit(&mut cache, &[(1, 11), (3, 30)]);
        assert_eq!(cache.get(&1, find), Some(11));
        assert_eq!(cache.get(&2, find), Some(20));
        commit(&mut cache, &[(4, 40)]); // 5 entries: the first block leaves
        assert_eq!(cache.get(&2, find), None);
        assert_eq!(cache.get(&1, find), Some(11));
    }

    #[test]
    fn small_blocks_leave_after_max_blocks_so_a_genesis_value_is_read_once_and_kept() {
        let mut cache = Recent::<BTreeMap<u64, u64>, u64, u64>::new(CAPACITY);
        commit(&mut cache, &[(1, 10)]); // genesis
        for height in 0..3 * MAX_BLOCKS as u64 {
            commit(&mut cache, &[(100 + height, height)]);
        }
        assert_eq!(
            cache.blocks.len(),
            MAX_BLOCKS,
            "a lookup walks at most this many"
        );
        assert_eq!(cache.get(&1, find), None, "the genesis block has left");
        cache.fill(cache.epoch(), 1, 10); // so the reader goes to disk, once
        assert_eq!(cache.get(&1, find), Some(10));
        let last = 3 * MAX_BLOCKS as u64 - 1;
        assert_eq!(cache.get(&(100 + last), find), Some(last));
    }

    #[test]
    fn a_read_from_before_a_write_never_resurfaces() {
        let mut cache = Recent::<BTreeMap<u64, u64>, u64, u64>::new(2);
        let epoch = cache.epoch();
        cache.fill(epoch, 7, 70); // read from disk
        commit(&mut cache, &[(7, 71)]); // then written
        assert_eq!(cache.get(&7, find), Some(71));
        commit(&mut cache, &[(8, 80), (9, 90)]); // the writing block leaves
        assert_eq!(cache.get(&7, find), None, "the old read must not come back");
    }

    #[test]
    fn a_read_that_straddles_a_commit_is_not_cached() {
        let mut cache = Recent::<BTreeMap<u64, u64>, u64, u64>::new(8);
        let epoch = cache.epoch();
        commit(&mut cache, &[(7, 71)]); // committed while the read was in flight
        cache.fill(epoch, 7, 70);
        assert_eq!(cache.get(&7, find), Some(71));
        cache.fill(cache.epoch(), 5, 50);
        assert_eq!(cache.get(&5, find), Some(50));
    }
}
