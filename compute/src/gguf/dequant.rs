//! ggml tensor types to f32: F32, F16, the block quantisations Q4_0, Q4_1, Q8_0 (blocks of
//! 32 values with an f16 scale, and for Q4_1 an f16 minimum; in a 4-bit block byte `j` holds
//! value `j` in its low nibble and value `j + 16` in its high nibble) and the K-quants Q4_K,
//! Q5_K, Q6_K (super-blocks of 256 values in 8 or 16 sub-blocks with their own 6- or 8-bit
//! scales; [`kquant`]). Checked against llama.cpp's Python package (`data/gguf/`).

use half::f16;

use crate::{Error, Result};

pub use kquant::q4_k_as_q4_blocks;

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
    /// 256 × 4-bit in 8 sub-blocks with 6-bit scales and minimums.
    pub const Q4_K: u32 = 12;
    /// 256 × 5-bit in 8 sub-blocks with 6-bit scales and minimums.
    pub const Q5_K: u32 = 13;
    /// 256 × 6-bit in 16 sub-blocks with 8-bit scales.
    pub const Q6_K: u32 = 14;
}

/// Values per block and bytes per block, for the block types.
fn block_layout(kind: u32) -> Option<(usize, usize)> {
    match kind {
        kind::Q4_0 => Some((32, 2 + 16)),
        kind::Q4_1 => Some((32, 2 + 2 + 16)),
        kind::Q8_0 => Some((32, 2 + 32)),
        kind::Q4_K => Some((256, 2 + 2 + 12 + 128)),
        kind::Q5_K => Some((256, 2 + 2 + 12 + 32 + 128)),
        kind::Q6_K => Some((256, 128 + 64 + 16 + 2)),
        _ => None,
    }
}

/// Bytes taken by `numel` values of type `kind`; `None` for an unsupported type or a count
/// that is not whole blocks.
pub fn byte_size(kind: u32, numel: usize) -> Option<usize> {
    match kind {
        kind::F32 => numel.checked_mul(4),
        kind::F16 => numel.checked_mul(2),
        _ => {
            let (values, bytes) = block_layout(kind)?;
            if numel % values != 0 {
                return None;
            }
            bytes.checked_mul(numel / values)
        }
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
        kind::Q4_K | kind::Q5_K | kind::Q6_K => kquant::decode(kind, data, &mut out),
        kind::Q4_0 | kind::Q4_1 => {
            let per = block_layout(kind).map_or(18, |(_, b)| b);
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
                "GGUF: tensor type {other} is not supported \
                 (F32, F16, Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K are)"
            )))
        }
    }
    Ok(out)
}

/// Whole super-blocks of the K-quant `kind` (Q4_K, Q5_K or Q6_K) in `data`, decoded into
/// `out` (as many values as they hold): for widening one row of a matrix kept in its blocks.
pub fn k_quant_into(kind: u32, data: &[u8], out: &mut [f32]) {
    kquant::decode(kind, data, &mut Fill { out, at: 0 });
}

/// Writes values into a slice in order (values past its end are dropped).
struct Fill<'a> {
    out: &'a mut [f32],
    at: usize,
}

impl Extend<f32> for Fill<'_> {
    fn extend<I: IntoIterator<Item = f32>>(&mut self, values: I) {
        for v in values {
            if let Some(o) = self.out.get_mut(self.at) {
                *o = v;
            }
            self.at += 1;
        }
    }
}

/// The K-quants: super-blocks of 256 values.
mod kquant {
    use super::{f16_at, kind};

    /// Sub-block `j`'s 6-bit scale and minimum from the 12 packed bytes of Q4_K and Q5_K:
    /// the first four pairs are the low six bits of bytes `j` and `j + 4`; the last four take
    /// their low nibbles from bytes `j + 4` and their top two bits from the first eight bytes.
    fn scale_min(j: usize, s: &[u8]) -> (f32, f32) {
        if j < 4 {
            (f32::from(s[j] & 63), f32::from(s[j + 4] & 63))
        } else {
            (
                f32::from((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4)),
                f32::from((s[j + 4] >> 4) | ((s[j] >> 6) << 4)),
            )
        }
    }

    /// Q4_K super-blocks as the 32-value blocks of 4-bit values with an f32 scale and
    /// minimum that Q4_1 rows are kept in (`q × scale + min`; byte `j` of a block's 16 holds
    /// value `j` in its low nibble and value `j + 16` in its high nibble), appended to
    /// `scales`, `mins` and `qs`. Exact: each sub-block of a super-block has its own 6-bit
    /// scale and minimum, whose products with the super-block's f16 factors f32 holds
    /// without rounding.
    pub fn q4_k_as_q4_blocks(
        data: &[u8],
        scales: &mut Vec<f32>,
        mins: &mut Vec<f32>,
        qs: &mut Vec<u8>,
    ) {
        for b in data.chunks_exact(144) {
            let (d, min) = (f16_at(b, 0), f16_at(b, 2));
            let (packed, q) = (&b[4..16], &b[16..144]);
            // Four groups of 64: 32 bytes, low nibbles then high nibbles, as `decode` reads.
            for (g, q) in q.chunks_exact(32).enumerate() {
                for (half, shift) in [(0, 0), (1, 4)] {
                    let (s, m) = scale_min(2 * g + half, packed);
                    scales.push(d * s);
                    mins.push(-(min * m));
                    let v = |i: usize| (q[i] >> shift) & 0x0f;
                    qs.extend((0..16).map(|j| v(j) | (v(j + 16) << 4)));
                }
            }
        }
    }

    /// Appends every value of `data` (whole blocks of `kind`) to `out`.
    pub(super) fn decode(kind: u32, data: &[u8], out: &mut impl Extend<f32>) {
        match kind {
            kind::Q4_K => {
                for b in data.chunks_exact(144) {
                    let (d, min) = (f16_at(b, 0), f16_at(b, 2));
                    let (scales, qs) = (&b[4..16], &b[16..144]);
                    // Four groups of 64: 32 bytes, low nibbles then high nibbles.
                    for (g, q) in qs.chunks_exact(32).enumerate() {
                        let (s1, m1) = scale_min(2 * g, scales);
                        let (s2, m2) = scale_min(2 * g + 1, scales);
                        out.extend(q.iter().map(|x| d * s1 * f32::from(x & 0x0f) - min * m1));
                        out.extend(q.iter().map(|x| d * s2 * f32::from(x >> 4) - min * m2));
                    }
                }
            }
            kind::Q5_K => {
                for b in data.chunks_exact(176) {
                    let (d, min) = (f16_at(b, 0), f16_at(b, 2));
                    let (scales, qh, qs) = (&b[4..16], &b[16..48], &b[48..176]);
                    // The fifth bit of group g's low and high halves is bit 2g and 2g + 1 of qh.
                    for (g, q) in qs.chunks_exact(32).enumerate() {
                        let (s1, m1) = scale_min(2 * g, scales);
                        let (s2, m2) = scale_min(2 * g + 1, scales);
                        let (lo, hi) = (1u8 << (2 * g), 1u8 << (2 * g + 1));
                        let bit = |h: u8, mask: u8| if h & mask != 0 { 16.0 } else { 0.0 };
                        out.extend(
                            q.iter().zip(qh).map(|(x, h)| {
                                d * s1 * (f32::from(x & 0x0f) + bit(*h, lo)) - min * m1
                            }),
                        );
                        out.extend(
                            q.iter().zip(qh).map(|(x, h)| {
                                d * s2 * (f32::from(x >> 4) + bit(*h, hi)) - min * m2
                            }),
                        );
                    }
                }
            }
            _ => {
                for b in data.chunks_exact(210) {
                    let (ql, qh, sc) = (&b[..128], &b[128..192], &b[192..208]);
                    let d = f16_at(b, 208);
                    let scale = |i: usize| f32::from(sc[i] as i8);
                    // Two halves of 128: 64 low-bit bytes, 32 high-bit bytes, 8 scales each.
                    for h in 0..2 {
                        let (ql, qh) = (&ql[64 * h..64 * h + 64], &qh[32 * h..32 * h + 32]);
                        let mut half = [0.0f32; 128];
                        for l in 0..32 {
                            let is = 8 * h + l / 16;
                            let q = |low: u8, shift: u8| {
                                f32::from(low | (((qh[l] >> shift) & 3) << 4)) - 32.0
                            };
                            half[l] = d * scale(is) * q(ql[l] & 0x0f, 0);
                            half[l + 32] = d * scale(is + 2) * q(ql[l + 32] & 0x0f, 2);
                            half[l + 64] = d * scale(is + 4) * q(ql[l] >> 4, 4);
                            half[l + 96] = d * scale(is + 6) * q(ql[l + 32] >> 4, 6);
                        }
                        out.extend(half);
                    }
                }
            }
        }
    }
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
        assert!(to_f32(99, &[], 0).is_err());
    }

    #[test]
    fn k_quants_match_llama_cpps_reference() {
        let text = include_str!("../../../data/gguf/kquants.json");
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        for case in v["cases"].as_array().unwrap() {
            let kind = u32::try_from(case["ggml_type"].as_u64().unwrap()).unwrap();
            let bytes = hex::decode(case["blocks_hex"].as_str().unwrap()).unwrap();
            let want: Vec<f32> = case["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect();
            let got = to_f32(kind, &bytes, want.len()).unwrap();
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                    "{}: value {i}: {g} vs {w}",
                    case["type"]
                );
            }
        }
    }
}
