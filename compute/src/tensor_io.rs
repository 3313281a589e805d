//! The canonical tensor encoding (`GCT1`) of job inputs and outputs.
//!
//! ```text
//! offset size  field
//! 0      4     magic b"GCT1"
//! 4      1     dtype: 1 = f32, 2 = u32
//! 5      1     rank r (1..=4)
//! 6      2     reserved, zero
//! 8      4·r   dims, u32 little-endian, outermost first
//! 8+4r   4·n   values, little-endian, row-major (n = product of dims)
//! ```
//!
//! A result's hash is blake3 of these bytes, so equal tensors always hash equally.

use crate::{Error, Result};

const MAGIC: &[u8; 4] = b"GCT1";

/// A decoded tensor: its dims and values.
#[derive(Clone, Debug, PartialEq)]
pub enum Tensor {
    /// 32-bit floats.
    F32 {
        /// Dims, outermost first.
        dims: Vec<usize>,
        /// Row-major values.
        data: Vec<f32>,
    },
    /// 32-bit unsigned integers (token ids).
    U32 {
        /// Dims, outermost first.
        dims: Vec<usize>,
        /// Row-major values.
        data: Vec<u32>,
    },
}

fn header(dtype: u8, dims: &[usize]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + 4 * dims.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[dtype, dims.len() as u8, 0, 0]);
    for d in dims {
        out.extend_from_slice(&(*d as u32).to_le_bytes());
    }
    out
}

/// Encodes an f32 tensor.
pub fn encode_f32(dims: &[usize], data: &[f32]) -> Vec<u8> {
    debug_assert_eq!(dims.iter().product::<usize>(), data.len());
    let mut out = header(1, dims);
    out.reserve(4 * data.len());
    for v in data {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// Encodes a u32 tensor.
pub fn encode_u32(dims: &[usize], data: &[u32]) -> Vec<u8> {
    debug_assert_eq!(dims.iter().product::<usize>(), data.len());
    let mut out = header(2, dims);
    for v in data {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// Decodes a `GCT1` tensor, checking magic, rank and length.
pub fn decode(bytes: &[u8]) -> Result<Tensor> {
    let bad = |m: String| Error::BadInput(format!("GCT1 tensor: {m}"));
    if bytes.len() < 8 || &bytes[..4] != MAGIC {
        return Err(bad("missing GCT1 magic".into()));
    }
    let (dtype, rank) = (bytes[4], bytes[5] as usize);
    if !(1..=4).contains(&rank) {
        return Err(bad(format!("rank {rank} is not in 1..=4")));
    }
    let body = 8 + 4 * rank;
    if bytes.len() < body {
        return Err(bad("truncated header".into()));
    }
    let dims: Vec<usize> = bytes[8..body]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize)
        .collect();
    let n = dims
        .iter()
        .try_fold(1usize, |a, d| a.checked_mul(*d))
        .ok_or_else(|| bad("dims overflow".into()))?;
    if (bytes.len() - body) / 4 != n || (bytes.len() - body) % 4 != 0 {
        return Err(bad(format!(
            "dims {dims:?} need {} value bytes, found {}",
            4 * n,
            bytes.len() - body
        )));
    }
    let words = bytes[body..]
        .chunks_exact(4)
        .map(|c| [c[0], c[1], c[2], c[3]]);
    match dtype {
        1 => Ok(Tensor::F32 {
            dims,
            data: words.map(f32::from_le_bytes).collect(),
        }),
        2 => Ok(Tensor::U32 {
            dims,
            data: words.map(u32::from_le_bytes).collect(),
        }),
        other => Err(bad(format!("unknown dtype {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_bad_lengths() {
        let bytes = encode_f32(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, -6.5]);
        assert_eq!(
            decode(&bytes).unwrap(),
            Tensor::F32 {
                dims: vec![2, 3],
                data: vec![1.0, 2.0, 3.0, 4.0, 5.0, -6.5]
            }
        );
        let cut = &bytes[..bytes.len() - 4];
        assert!(decode(cut)
            .unwrap_err()
            .to_string()
            .contains("need 24 value bytes"));
        let u = encode_u32(&[3], &[1, 2, 3]);
        assert_eq!(
            decode(&u).unwrap(),
            Tensor::U32 {
                dims: vec![3],
                data: vec![1, 2, 3]
            }
        );
        assert!(decode(b"nope").is_err());
    }
}
