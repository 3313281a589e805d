//! A directory of blobs named by their blake3 hex.

use std::path::{Path, PathBuf};

use gpuchain_jobspec::{BlobHash, BlobRef};

use crate::{Error, Result};

/// blake3 of some bytes as a [`BlobHash`].
pub fn hash_bytes(bytes: &[u8]) -> BlobHash {
    BlobHash(*blake3::hash(bytes).as_bytes())
}

/// A directory holding blobs as `<dir>/<hex>`; partial writes live in `<dir>/tmp/` until
/// verified and renamed into place.
#[derive(Clone, Debug)]
pub struct BlobStore {
    dir: PathBuf,
}

impl BlobStore {
    /// Opens (creating if needed) a store in `dir`.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(dir.join("tmp"))?;
        Ok(Self { dir })
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where a blob lives (whether or not it is present).
    pub fn path(&self, hash: &BlobHash) -> PathBuf {
        self.dir.join(hash.to_hex())
    }

    /// A fresh temporary path inside the store, on the same file system as the blobs.
    pub(crate) fn temp_path(&self, hash: &BlobHash) -> PathBuf {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.dir
            .join("tmp")
            .join(format!("{}.{}.{n}", hash.to_hex(), std::process::id()))
    }

    /// Whether a file for this hash is present (not verified).
    pub fn contains(&self, hash: &BlobHash) -> bool {
        self.path(hash).is_file()
    }

    /// Stores bytes under their own hash and returns a reference without URLs.
    pub fn put(&self, bytes: &[u8]) -> Result<BlobRef> {
        let hash = hash_bytes(bytes);
        let tmp = self.temp_path(&hash);
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, self.path(&hash))?;
        Ok(BlobRef {
            blake3: hash.0,
            size: bytes.len() as u64,
            urls: Vec::new(),
        })
    }

    /// Reads a blob and checks it against its reference. A file that fails the check is
    /// deleted, so it is never used.
    pub fn get(&self, blob: &BlobRef) -> Result<Vec<u8>> {
        let path = self.path(&blob.hash());
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::BlobMissing(blob.hash()))
            }
            Err(e) => return Err(e.into()),
        };
        if let Err(e) = verify(blob, &bytes) {
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        Ok(bytes)
    }

    /// Moves a verified temporary file into place.
    pub(crate) fn commit_temp(&self, tmp: &Path, hash: &BlobHash) -> Result<PathBuf> {
        let dest = self.path(hash);
        std::fs::rename(tmp, &dest)?;
        Ok(dest)
    }
}

/// Checks size, then hash, of bytes against a reference.
pub(crate) fn verify(blob: &BlobRef, bytes: &[u8]) -> Result<()> {
    if bytes.len() as u64 != blob.size {
        return Err(Error::BlobSizeMismatch {
            hash: blob.hash(),
            expected: blob.size,
            actual: bytes.len() as u64,
        });
    }
    let actual = hash_bytes(bytes);
    if actual != blob.hash() {
        return Err(Error::BlobHashMismatch {
            expected: blob.hash(),
            actual,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tampered_file_is_rejected_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path()).unwrap();
        let blob = store.put(b"hello weights").unwrap();
        assert_eq!(store.get(&blob).unwrap(), b"hello weights");
        std::fs::write(store.path(&blob.hash()), b"hello weightz").unwrap();
        let err = store.get(&blob).unwrap_err();
        assert!(matches!(err, Error::BlobHashMismatch { .. }), "{err}");
        assert!(!store.contains(&blob.hash()));
        assert!(matches!(
            store.get(&blob).unwrap_err(),
            Error::BlobMissing(_)
        ));
    }
}
