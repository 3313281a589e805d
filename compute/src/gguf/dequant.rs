//! ggml tensor types to f32: F32, F16, and the block quantisations Q4_0, Q4_1, Q8_0 (blocks of
//! 32 values with an f16 scale, and for Q4_1 an f16 minimum). In a 4-bit block byte `j` holds
//! value `j` in its low nibble and value `j + 16` in its high nibble.

use half::f16;

use crate::{Error, Result};

/// ggml type ids.
pub mod kind {
    /// f32.
    pub const F32: u32 = 0;
    /// f16.
    pub const F16: u32 = 1;
    /// 32 × 4-bit, one scale: `(q − 8) × d`.
    pub const Q4_0: u32 = 2;
    /// 32 × 4-bit, scale and minimum: `q × d + m`.
    pub const Q4_1: u32 = 3;
    /// 32 × 8-bit, one scale: `q × d`.
    pub const Q8_0: u32 = 8;
}

const BLOCK: usize = 32;

/// Bytes per block of 32 values, for the block types.
fn block_bytes(kind: u32) -> Option<usize> {
    match kind {
        kind::Q4_0 => Some(2 + 16),
        kind::Q4_1 => Some(2 + 2 + 16),
        kind::Q8_0 => Some(2 + 32),
        _ => None,
    }
}

/// Bytes taken by `numel` values of type `kind`; `None` for an unsupported type or a count
/// that is not whole blocks.
pub fn byte_size(kind: u32, numel: usize) -> Option<usize> {
    match kind {
        kind::F32 => numel.checked_mul(4),
        kind::F16 => numel.checked_mul(2),
        _ if numel % BLOCK == 0 => block_bytes(kind)?.checked_mul(numel / BLOCK),
        _ => None,
    }
}

fn f16_at(b: &[u8], at: usize) -> f32 {
    f16::from_le_bytes([b[at], b[at + 1]]).to_f32()
}

/// `numel` values of type `kind` stored in `data` (exactly [`byte_size`] bytes), as f32.
pub fn to_f32(kind: u32, data: &[u8], numel: usize) -> Result<Vec<f32>> {
    if byte_size(kind, numel) != Some(data.len()) {
        return Err(Error::BadWeights(format!(
            "GGUF: {} bytes for {numel} values of type {kind}",
            data.len()
        )));
    }
    let mut out = Vec::with_capacity(numel);
    match kind {
        kind::F32 => out.extend(
            data.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        ),
        kind::F16 => out.extend(data.chunks_exact(2).map(|b| f16_at(b, 0))),
        kind::Q4_0 | kind::Q4_1 => {
            let per = block_bytes(kind).unwrap_or(18);
            let q_at = if kind == kind::Q4_0 { 2 } else { 4 };
            for b in data.chunks_exact(per) {
                let d = f16_at(b, 0);
                let (m, offset) = if kind == kind::Q4_0 {
                    (0.0, 8.0)
                } else {
                    (f16_at(b, 2), 0.0)
                };
                let qs = &b[q_at..q_at + 16];
                out.extend(qs.iter().map(|q| (f32::from(q & 0x0f) - offset) * d + m));
                out.extend(qs.iter().map(|q| (f32::from(q >> 4) - offset) * d + m));
            }
        }
        kind::Q8_0 => {
            for b in data.chunks_exact(34) {
                let d = f16_at(b, 0);
                out.extend(b[2..].iter().map(|q| f32::from(*q as i8) * d));
            }
        }
        other => {
            return Err(Error::BadWeights(format!(
                "GGUF: tensor type {other} is not supported (F32, F16, Q4_0, Q4_1, Q8_0 are)"
            )))
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(x: f32) -> [u8; 2] {
        f16::from_f32(x).to_le_bytes()
    }

    #[test]
    fn block_types_decode_by_their_layout() {
        // Q4_1: d = 0.5, m = −1; byte j = (j % 16) | (15 − j % 16) << 4.
        let mut b = Vec::new();
        b.extend(h(0.5));
        b.extend(h(-1.0));
        b.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
        let v = to_f32(kind::Q4_1, &b, 32).unwrap();
        assert_eq!(v[0], -1.0);
        assert_eq!(v[3], 0.5);
        assert_eq!(v[16], 6.5, "value 16 is byte 0's high nibble (15)");
        assert_eq!(v[31], -1.0);
        // Q4_0: (q − 8) × d.
        let mut b = h(2.0).to_vec();
        b.extend([0x8fu8; 16]);
        let v = to_f32(kind::Q4_0, &b, 32).unwrap();
        assert_eq!((v[0], v[16]), (14.0, 0.0));
        // Q8_0: q × d with signed bytes.
        let mut b = h(0.25).to_vec();
        b.extend((0..32).map(|j: i32| (j - 16) as i8 as u8));
        let v = to_f32(kind::Q8_0, &b, 32).unwrap();
        assert_eq!((v[0], v[16], v[31]), (-4.0, 0.0, 3.75));
        // Sizes must match exactly; unsupported types are named.
        assert!(to_f32(kind::Q8_0, &b[..33], 32).is_err());
        assert!(byte_size(kind::Q8_0, 31).is_none());
        assert!(to_f32(12, &[], 0).is_err());
    }
}
