//! GGUF models read from disk by memory mapping, whole or split into several files
//! (llama.cpp's `gguf-split` names them `<name>-00001-of-00003.gguf`, …; any one of them
//! names the model). The files are not read into memory: the decoder copies each tensor's
//! blocks out of the mapping once as it loads, so a model of several GiB needs its own size
//! in memory, not twice that, and the mapping's pages stay the kernel's to drop.

use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::Gguf;
use crate::{Error, Result};

/// The mapped files of one model, in order.
pub struct GgufFile {
    paths: Vec<PathBuf>,
    maps: Vec<Mmap>,
}

/// The files of the split model `path` belongs to (`<stem>-<i, 5 digits>-of-<n, 5 digits>.gguf`),
/// in order; `None` for a name without that pattern.
fn split_files(path: &Path) -> Option<Vec<PathBuf>> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".gguf")?;
    let (rest, count) = stem.rsplit_once("-of-")?;
    let (base, index) = rest.rsplit_once('-')?;
    let digits = |s: &str| s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(count) || !digits(index) {
        return None;
    }
    let count: u32 = count.parse().ok()?;
    Some(
        (1..=count)
            .map(|i| path.with_file_name(format!("{base}-{i:05}-of-{count:05}.gguf")))
            .collect(),
    )
}

/// The files of the model at `path`: every file of the split model it is one of, else
/// `path` alone.
pub fn model_files(path: &Path) -> Vec<PathBuf> {
    split_files(path).unwrap_or_else(|| vec![path.to_path_buf()])
}

/// Bytes of the model's files on disk (all of a split model's), from their metadata without
/// opening them: what its weights take once loaded, as they stay in their 4/8-bit blocks.
pub fn model_size(path: &Path) -> Result<usize> {
    model_files(path).iter().try_fold(0usize, |total, file| {
        let len = std::fs::metadata(file)
            .map_err(|e| Error::BadInput(format!("{}: {e}", file.display())))?
            .len();
        Ok(total.saturating_add(usize::try_from(len).unwrap_or(usize::MAX)))
    })
}

/// Maps `path` read-only.
#[allow(unsafe_code)]
fn map(path: &Path) -> Result<Mmap> {
    let file = std::fs::File::open(path)
        .map_err(|e| Error::BadInput(format!("opening {}: {e}", path.display())))?;
    // SAFETY: the mapping is read-only and private to this process. Another process
    // truncating or rewriting the file while it is mapped would change the bytes under it
    // (or fault on pages past a new end); model files are written once and then only read,
    // as llama.cpp, which maps them the same way by default, also assumes. The decoder
    // copies what it needs out of the mapping while loading.
    unsafe { Mmap::map(&file) }
        .map_err(|e| Error::BadInput(format!("mapping {}: {e}", path.display())))
}

impl GgufFile {
    /// Maps the model at `path`: that file, or every file of the split model it is one of.
    pub fn open(path: &Path) -> Result<GgufFile> {
        let paths = model_files(path);
        let maps = paths.iter().map(|p| map(p)).collect::<Result<Vec<_>>>()?;
        Ok(GgufFile { paths, maps })
    }

    /// The model's files, in order.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// The parsed model over the mapped bytes.
    pub fn parse(&self) -> Result<Gguf<'_>> {
        match self.maps.as_slice() {
            [one] => Gguf::parse(one),
            parts => Gguf::parse_split(&parts.iter().map(|m| &m[..]).collect::<Vec<_>>()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split_files;
    use std::path::{Path, PathBuf};

    #[test]
    fn any_file_of_a_split_model_names_all_of_them() {
        let parts = split_files(Path::new("/m/qwen-00002-of-00003.gguf")).unwrap();
        let want: Vec<PathBuf> = (1..=3)
            .map(|i| PathBuf::from(format!("/m/qwen-{i:05}-of-00003.gguf")))
            .collect();
        assert_eq!(parts, want);
        assert_eq!(
            split_files(Path::new("/m/SmolLM2-135M-Instruct.Q4_1.gguf")),
            None
        );
        assert_eq!(split_files(Path::new("/m/x-1-of-2.gguf")), None);
    }
}
