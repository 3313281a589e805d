//! State-sync snapshots: the whole state of a height, in chunks, written by a background
//! thread from a RocksDB snapshot taken at Commit, and served to joining nodes.
//!
//! On disk, `<dir>/<height>/` holds `chunk-<i>` files (each the borsh `Vec<(String,
//! Vec<u8>)>` of a run of keys, in key order) and `metadata` (the borsh [`Metadata`]: each
//! chunk's blake3). A snapshot is written under `<height>.partial/` and renamed when
//! complete, so a listed snapshot is always whole. The snapshot's ABCI hash is the blake3
//! of its metadata: a chunk is checked against the hash the metadata lists for it, and the
//! restored state against the app hash of a header the light client verified.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use anyhow::{anyhow, Context, Result};
use borsh::{BorshDeserialize, BorshSerialize};
use rocksdb::{IteratorMode, ReadOptions, DB};

use super::{cf, StateEntries, Store, CF_LATEST};

/// The chunk and metadata encoding described above.
pub const SNAPSHOT_FORMAT: u32 = 1;

/// A snapshot's metadata, as ABCI carries it.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct Metadata {
    /// blake3 of each chunk, in order.
    pub chunk_hashes: Vec<[u8; 32]>,
}

/// One complete snapshot on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// Height whose state it holds.
    pub height: u64,
    /// Number of chunks.
    pub chunks: u32,
    /// blake3 of `metadata`.
    pub hash: [u8; 32],
    /// borsh [`Metadata`].
    pub metadata: Vec<u8>,
}

/// Where and how often snapshots are taken.
#[derive(Clone, Debug)]
pub struct SnapshotPolicy {
    /// Directory holding one subdirectory per snapshot.
    pub dir: PathBuf,
    /// Every this many heights (0: never).
    pub interval: u64,
    /// Snapshots kept; older ones are deleted once a new one is complete.
    pub keep_recent: usize,
    /// A chunk is closed once its encoding reaches this many bytes.
    pub chunk_bytes: usize,
}

/// Takes snapshots in the background, one at a time.
#[derive(Clone, Debug)]
pub struct Snapshotter {
    policy: SnapshotPolicy,
    busy: Arc<AtomicBool>,
}

impl Snapshotter {
    /// A snapshotter following `policy`.
    pub fn new(policy: SnapshotPolicy) -> Snapshotter {
        Snapshotter {
            policy,
            busy: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Whether `height` is due for a snapshot.
    pub fn due(&self, height: u64) -> bool {
        self.policy.interval > 0 && height > 0 && height.is_multiple_of(self.policy.interval)
    }

    /// Starts a snapshot of `store`'s committed height and returns once its RocksDB
    /// snapshot is taken (the state cannot move under it after that); the chunks are
    /// written by a thread of their own. A snapshot still being written makes this one
    /// skipped rather than queued.
    pub fn start(&self, store: &Store) -> Result<bool> {
        if self.busy.swap(true, Ordering::AcqRel) {
            tracing::warn!(
                height = store.height(),
                "the previous snapshot is still being written; skipping this one"
            );
            return Ok(false);
        }
        let db = Arc::clone(&store.db);
        let height = store.height();
        let policy = self.policy.clone();
        let busy = Arc::clone(&self.busy);
        let (taken_tx, taken_rx) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("snapshot".into())
            .spawn(move || {
                yield_to_blocks(height);
                let result = write(&db, height, &policy, || {
                    let _ = taken_tx.send(());
                });
                match result {
                    Ok(info) => tracing::info!(
                        height,
                        chunks = info.chunks,
                        hash = %hex::encode(info.hash),
                        "state-sync snapshot written"
                    ),
                    Err(e) => tracing::error!(height, error = %format!("{e:#}"), "state-sync snapshot failed"),
                }
                busy.store(false, Ordering::Release);
            })
            .context("starting the snapshot thread")?;
        taken_rx
            .recv()
            .map_err(|_| anyhow!("the snapshot thread ended before taking its snapshot"))?;
        Ok(true)
    }

    /// Complete snapshots, newest first.
    pub fn list(&self) -> Result<Vec<SnapshotInfo>> {
        list(&self.policy.dir)
    }

    /// The height of the oldest complete snapshot, from the directory names alone.
    pub fn oldest_height(&self) -> Option<u64> {
        heights(&self.policy.dir).into_iter().min()
    }

    /// Chunk `index` of the snapshot at `height`, as stored.
    pub fn chunk(&self, height: u64, index: u32) -> Result<Vec<u8>> {
        let path = self
            .policy
            .dir
            .join(height.to_string())
            .join(format!("chunk-{index}"));
        std::fs::read(&path).with_context(|| format!("reading {}", path.display()))
    }
}

/// Writes the snapshot of `height` from a RocksDB snapshot; `taken` is called once that
/// snapshot exists.
fn write(
    db: &DB,
    height: u64,
    policy: &SnapshotPolicy,
    taken: impl FnOnce(),
) -> Result<SnapshotInfo> {
    let snapshot = db.snapshot();
    taken();
    let partial = policy.dir.join(format!("{height}.partial"));
    if partial.exists() {
        std::fs::remove_dir_all(&partial)?;
    }
    std::fs::create_dir_all(&partial).with_context(|| format!("creating {}", partial.display()))?;
    let latest = cf(db, CF_LATEST)?;
    let mut hashes = Vec::new();
    let mut chunk: StateEntries = Vec::new();
    let mut chunk_size = 0usize;
    let flush = |chunk: &mut StateEntries, hashes: &mut Vec<[u8; 32]>| -> Result<()> {
        let bytes = borsh::to_vec(chunk)?;
        std::fs::write(partial.join(format!("chunk-{}", hashes.len())), &bytes)?;
        hashes.push(*blake3::hash(&bytes).as_bytes());
        chunk.clear();
        Ok(())
    };
    for item in snapshot.iterator_cf_opt(latest, bulk_read_options(), IteratorMode::Start) {
        let (key, value) = item?;
        let key = String::from_utf8(key.to_vec())?;
        chunk_size = chunk_size
            .saturating_add(key.len())
            .saturating_add(value.len())
            .saturating_add(8);
        chunk.push((key, value.to_vec()));
        if chunk_size >= policy.chunk_bytes {
            flush(&mut chunk, &mut hashes)?;
            chunk_size = 0;
        }
    }
    if !chunk.is_empty() || hashes.is_empty() {
        flush(&mut chunk, &mut hashes)?;
    }
    let metadata = borsh::to_vec(&Metadata {
        chunk_hashes: hashes,
    })?;
    std::fs::write(partial.join("metadata"), &metadata)?;
    let done = policy.dir.join(height.to_string());
    if done.exists() {
        std::fs::remove_dir_all(&done)?;
    }
    std::fs::rename(&partial, &done)?;
    for old in list(&policy.dir)?
        .into_iter()
        .skip(policy.keep_recent.max(1))
    {
        std::fs::remove_dir_all(policy.dir.join(old.height.to_string()))?;
    }
    info(&done, height)
}

/// Nice value of the snapshot thread: the lowest priority there is. A block being executed
/// and committed must never wait for the writer; the writer only needs to finish before the
/// next snapshot is due.
pub const WRITER_NICE: i32 = 19;

/// Lowers the calling thread to [`WRITER_NICE`]. On Linux the nice value is a per-thread
/// attribute, so only the writer is lowered, not the node. A failure costs only speed.
fn yield_to_blocks(height: u64) {
    let tid = rustix::thread::gettid();
    if let Err(e) = rustix::process::setpriority_process(Some(tid), WRITER_NICE) {
        tracing::warn!(height, error = %e, "could not lower the snapshot thread's priority");
    }
}

/// Reads for a whole-state scan: they bypass RocksDB's block cache, so that the scan does
/// not evict the blocks the next FinalizeBlock reads, and read ahead, since the scan is in
/// key order.
fn bulk_read_options() -> ReadOptions {
    let mut options = ReadOptions::default();
    options.fill_cache(false);
    options.set_readahead_size(2 << 20);
    options
}

fn list(dir: &Path) -> Result<Vec<SnapshotInfo>> {
    let mut heights = heights(dir);
    heights.sort_unstable_by_key(|h| std::cmp::Reverse(*h));
    heights
        .into_iter()
        .map(|height| info(&dir.join(height.to_string()), height))
        .collect()
}

/// The heights of the complete snapshots in `dir` (a `<height>.partial` one is not listed).
fn heights(dir: &Path) -> Vec<u64> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .collect()
}

fn info(dir: &Path, height: u64) -> Result<SnapshotInfo> {
    let metadata = std::fs::read(dir.join("metadata"))
        .with_context(|| format!("reading {}/metadata", dir.display()))?;
    let parsed = Metadata::try_from_slice(&metadata)?;
    Ok(SnapshotInfo {
        height,
        chunks: u32::try_from(parsed.chunk_hashes.len())?,
        hash: *blake3::hash(&metadata).as_bytes(),
        metadata,
    })
}

/// Chunks received from peers, checked one by one against the offered snapshot's metadata.
#[derive(Debug)]
pub struct Restore {
    /// Height of the snapshot.
    pub height: u64,
    /// The app hash the light client verified for that height.
    pub app_hash: [u8; 32],
    hashes: Vec<[u8; 32]>,
    chunks: Vec<Option<Vec<u8>>>,
}

/// What checking a chunk found.
#[derive(Debug, PartialEq, Eq)]
pub enum ChunkCheck {
    /// Stored; more chunks are needed.
    Stored,
    /// Every chunk is here.
    Complete,
    /// The chunk does not hash to what the metadata lists: fetch it from another peer.
    Mismatch,
}

impl Restore {
    /// A restore of the offered snapshot; refuses metadata that does not match its hash or
    /// its chunk count.
    pub fn offer(
        height: u64,
        chunks: u32,
        hash: &[u8],
        metadata: &[u8],
        app_hash: &[u8],
    ) -> Result<Restore> {
        anyhow::ensure!(
            blake3::hash(metadata).as_bytes().as_slice() == hash,
            "the snapshot's metadata does not match its hash"
        );
        let parsed = Metadata::try_from_slice(metadata).context("undecodable metadata")?;
        anyhow::ensure!(
            u32::try_from(parsed.chunk_hashes.len()).ok() == Some(chunks) && chunks > 0,
            "the snapshot says {chunks} chunks but its metadata lists {}",
            parsed.chunk_hashes.len()
        );
        let app_hash: [u8; 32] = app_hash
            .try_into()
            .map_err(|_| anyhow!("the trusted app hash is {} bytes, not 32", app_hash.len()))?;
        Ok(Restore {
            height,
            app_hash,
            chunks: vec![None; parsed.chunk_hashes.len()],
            hashes: parsed.chunk_hashes,
        })
    }

    /// Checks chunk `index` against the metadata and keeps it if it matches.
    pub fn add(&mut self, index: u32, chunk: Vec<u8>) -> Result<ChunkCheck> {
        let i = usize::try_from(index)?;
        let expected = self
            .hashes
            .get(i)
            .ok_or_else(|| anyhow!("chunk {index} of a {}-chunk snapshot", self.hashes.len()))?;
        if blake3::hash(&chunk).as_bytes() != expected {
            return Ok(ChunkCheck::Mismatch);
        }
        let slot = self.chunks.get_mut(i).ok_or_else(|| {
            anyhow!(
                "chunk {index} has no slot in a {}-chunk restore",
                self.hashes.len()
            )
        })?;
        *slot = Some(chunk);
        Ok(if self.chunks.iter().all(Option::is_some) {
            ChunkCheck::Complete
        } else {
            ChunkCheck::Stored
        })
    }

    /// The whole state the chunks hold; keys must ascend strictly across them.
    pub fn entries(&self) -> Result<StateEntries> {
        let mut entries: StateEntries = Vec::new();
        for (i, chunk) in self.chunks.iter().enumerate() {
            let chunk = chunk
                .as_ref()
                .ok_or_else(|| anyhow!("chunk {i} is missing"))?;
            let part = StateEntries::try_from_slice(chunk)
                .with_context(|| format!("chunk {i} does not decode"))?;
            for (key, value) in part {
                if entries.last().is_some_and(|(last, _)| *last >= key) {
                    anyhow::bail!("chunk {i}: keys out of order at {key}");
                }
                entries.push((key, value));
            }
        }
        Ok(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own_nice() -> i32 {
        rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap()
    }

    #[test]
    fn the_writer_lowers_only_its_own_thread() {
        let before = own_nice();
        let writer = std::thread::spawn(|| {
            yield_to_blocks(1);
            own_nice()
        })
        .join()
        .unwrap();
        assert_eq!(writer, WRITER_NICE);
        assert_eq!(own_nice(), before, "the caller's priority changed too");
    }
}
