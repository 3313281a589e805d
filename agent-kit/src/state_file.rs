//! A tiny durable file store for the agents' state: one JSON document, replaced atomically
//! (write a temporary file, fsync it, rename it over the old one, fsync the directory), so
//! a crash at any instant leaves either the old or the new document, never a torn one.

use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// The file is not valid JSON for the document type.
    #[error("{path} is corrupt: {source}")]
    Corrupt {
        /// File.
        path: PathBuf,
        /// Cause.
        source: serde_json::Error,
    },
}

/// A JSON document at a path.
#[derive(Clone, Debug)]
pub struct JsonFile {
    path: PathBuf,
}

impl JsonFile {
    /// The store at `path` (nothing is read or written yet).
    pub fn new(path: impl Into<PathBuf>) -> JsonFile {
        JsonFile { path: path.into() }
    }

    /// Where the document lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, source: std::io::Error) -> StoreError {
        StoreError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// The stored document, or `T::default()` when there is none yet.
    pub fn load<T: DeserializeOwned + Default>(&self) -> Result<T, StoreError> {
        match fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| StoreError::Corrupt {
                path: self.path.clone(),
                source,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
            Err(e) => Err(self.io(e)),
        }
    }

    /// Replaces the document durably.
    pub fn save<T: Serialize>(&self, value: &T) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(value).map_err(|source| StoreError::Corrupt {
            path: self.path.clone(),
            source,
        })?;
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(|e| self.io(e))?;
        let tmp = self.path.with_extension("json.tmp");
        let mut f = File::create(&tmp).map_err(|e| self.io(e))?;
        f.write_all(&bytes).map_err(|e| self.io(e))?;
        f.sync_all().map_err(|e| self.io(e))?;
        drop(f);
        fs::rename(&tmp, &self.path).map_err(|e| self.io(e))?;
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| self.io(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_missing_file_is_the_default_and_saves_replace_it_whole() {
        let dir = tempfile::tempdir().unwrap();
        let f = JsonFile::new(dir.path().join("sub/state.json"));
        let empty: BTreeMap<String, u64> = f.load().unwrap();
        assert!(empty.is_empty());
        let mut m = BTreeMap::new();
        m.insert("a".to_string(), 1u64);
        f.save(&m).unwrap();
        m.insert("b".to_string(), 2);
        f.save(&m).unwrap();
        assert_eq!(f.load::<BTreeMap<String, u64>>().unwrap(), m);
        assert!(!f.path().with_extension("json.tmp").exists());
    }

    #[test]
    fn a_corrupt_file_is_an_error_not_a_reset() {
        let dir = tempfile::tempdir().unwrap();
        let f = JsonFile::new(dir.path().join("state.json"));
        fs::write(f.path(), b"{ half").unwrap();
        let err = f.load::<BTreeMap<String, u64>>().unwrap_err();
        assert!(err.to_string().contains("corrupt"), "{err}");
    }
}
