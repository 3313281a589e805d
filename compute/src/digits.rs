//! The UCI handwritten digits (8×8, 10 classes), embedded in the crate and checked by hash.
//!
//! Source, license (CC BY 4.0) and attribution: `data/digits/README.md`. Split rule: row `i`
//! is a test row when `i % 5 == 0` (360 test, 1,437 train rows).

use std::io::Read;

use gpuchain_jobspec::BlobRef;

use crate::{Error, Result};

/// The gzipped CSV exactly as shipped by scikit-learn.
pub const DIGITS_CSV_GZ: &[u8] = include_bytes!("../../data/digits/digits.csv.gz");

/// blake3 of [`DIGITS_CSV_GZ`].
pub const DIGITS_BLAKE3_HEX: &str =
    "6e6d08206f25ea2b4115da8d88938afa92b1e035f762278c06b5df6fb254188a";

/// Pixels per image.
pub const PIXELS: usize = 64;
/// Classes.
pub const CLASSES: usize = 10;

/// A set of digit images with labels. Pixels are scaled to 0..=1 (count / 16, exact).
#[derive(Clone, Debug, PartialEq)]
pub struct Digits {
    /// `len × 64` row-major pixels in 0..=1.
    pub pixels: Vec<f32>,
    /// Class of each image.
    pub labels: Vec<u8>,
}

/// A blob reference (no URLs) for the embedded dataset.
pub fn builtin_blob() -> BlobRef {
    BlobRef {
        blake3: *blake3::hash(DIGITS_CSV_GZ).as_bytes(),
        size: DIGITS_CSV_GZ.len() as u64,
        urls: Vec::new(),
    }
}

impl Digits {
    /// The embedded dataset, after checking its hash.
    pub fn builtin() -> Result<Self> {
        let actual = blake3::hash(DIGITS_CSV_GZ).to_hex();
        if actual.as_str() != DIGITS_BLAKE3_HEX {
            return Err(Error::Dataset(format!(
                "embedded digits.csv.gz hashes to {actual}, expected {DIGITS_BLAKE3_HEX}"
            )));
        }
        Self::parse_gz(DIGITS_CSV_GZ)
    }

    /// Parses the gzipped CSV (64 pixel counts 0..=16, then the label, per line).
    pub fn parse_gz(gz: &[u8]) -> Result<Self> {
        let mut csv = String::new();
        flate2::read::GzDecoder::new(gz)
            .read_to_string(&mut csv)
            .map_err(|e| Error::Dataset(format!("gunzip: {e}")))?;
        let mut out = Digits {
            pixels: Vec::new(),
            labels: Vec::new(),
        };
        for (line_no, line) in csv
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let fields: Vec<&str> = line.split(',').collect();
            if fields.len() != PIXELS + 1 {
                return Err(Error::Dataset(format!(
                    "line {}: {} fields, expected 65",
                    line_no + 1,
                    fields.len()
                )));
            }
            for f in &fields[..PIXELS] {
                let v: u8 = f.trim().parse().map_err(|_| {
                    Error::Dataset(format!("line {}: bad pixel `{f}`", line_no + 1))
                })?;
                if v > 16 {
                    return Err(Error::Dataset(format!(
                        "line {}: pixel {v} > 16",
                        line_no + 1
                    )));
                }
                out.pixels.push(f32::from(v) / 16.0);
            }
            let label: u8 = fields[PIXELS]
                .trim()
                .parse()
                .map_err(|_| Error::Dataset(format!("line {}: bad label", line_no + 1)))?;
            if usize::from(label) >= CLASSES {
                return Err(Error::Dataset(format!(
                    "line {}: label {label} ≥ 10",
                    line_no + 1
                )));
            }
            out.labels.push(label);
        }
        Ok(out)
    }

    /// Number of images.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are no images.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Pixels of image `i`.
    pub fn image(&self, i: usize) -> &[f32] {
        &self.pixels[i * PIXELS..(i + 1) * PIXELS]
    }

    /// The rows selected by `keep(index)`.
    fn select(&self, keep: impl Fn(usize) -> bool) -> Self {
        let mut out = Digits {
            pixels: Vec::new(),
            labels: Vec::new(),
        };
        for i in (0..self.len()).filter(|i| keep(*i)) {
            out.pixels.extend_from_slice(self.image(i));
            out.labels.push(self.labels[i]);
        }
        out
    }

    /// The fixed split: `(train, test)` with row `i` in test when `i % 5 == 0`.
    pub fn split(&self) -> (Self, Self) {
        (self.select(|i| i % 5 != 0), self.select(|i| i % 5 == 0))
    }

    /// Worker `w` of `k`'s shard of a training set: rows with `i % k == w`.
    pub fn shard(&self, w: usize, k: usize) -> Self {
        self.select(|i| i % k == w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_dataset_parses_and_splits() {
        let d = Digits::builtin().unwrap();
        assert_eq!(d.len(), 1797);
        let (train, test) = d.split();
        assert_eq!((train.len(), test.len()), (1437, 360));
        assert_eq!(d.labels[..5], [0, 1, 2, 3, 4]);
        assert!(d.pixels.iter().all(|p| (0.0..=1.0).contains(p)));
    }

    #[test]
    fn corrupt_csv_is_rejected() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"1,2,3\n").unwrap();
        let err = Digits::parse_gz(&gz.finish().unwrap()).unwrap_err();
        assert!(err.to_string().contains("3 fields, expected 65"), "{err}");
    }
}
