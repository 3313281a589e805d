//! Update messages: top-k selection, value quantisation and the wire encoding.
//!
//! ```text
//! "GCU1" | round u32 | worker u32 | numel u32 | nnz u32 | bits u8 | dense u8 |
//! [scale f32 when bits = 8] | [indices: nnz LEB128 varints of gaps, unless dense] |
//! values: nnz × (f32 | f16 | i8), little-endian
//! ```
//! Gaps: the first index itself, then `index − previous index` (≥ 1). A dense message
//! (every entry selected) omits the indices. All integers little-endian.

use gpuchain_jobspec::ValueBits;

use crate::{Error, Result};

/// A decoded update: which entries and their (dequantised) values.
#[derive(Clone, Debug, PartialEq)]
pub struct UpdateMessage {
    /// Round number.
    pub round: u32,
    /// Worker index.
    pub worker: u32,
    /// Length of the full update vector.
    pub numel: u32,
    /// Selected indices, ascending.
    pub indices: Vec<u32>,
    /// Values at `indices`, after quantisation.
    pub values: Vec<f32>,
}

/// Density at `round` in ppm: DGC warm-up decays exponentially from 25% towards `topk_ppm`
/// over `warmup_rounds` (25%, 6.25%, …), then stays at `topk_ppm`.
pub fn density_ppm(topk_ppm: u32, warmup_rounds: u32, round: u32) -> u32 {
    if round >= warmup_rounds {
        return topk_ppm;
    }
    let t = f64::from(round) / f64::from(warmup_rounds);
    let start = 250_000f64.max(f64::from(topk_ppm));
    let d = start * libm::pow(f64::from(topk_ppm) / start, t);
    (d as u32).max(topk_ppm)
}

/// Indices of the `k` largest `|v|`, ties broken by lower index, returned ascending. A total
/// order (magnitude bits, then index), so every machine picks the same set.
pub fn top_k(v: &[f32], k: usize) -> Vec<u32> {
    let k = k.min(v.len());
    if k == v.len() {
        return (0..v.len() as u32).collect();
    }
    let key = |i: u32| (std::cmp::Reverse(v[i as usize].abs().to_bits()), i);
    let mut idx: Vec<u32> = (0..v.len() as u32).collect();
    if k > 0 {
        idx.select_nth_unstable_by_key(k - 1, |i| key(*i));
    }
    idx.truncate(k);
    idx.sort_unstable();
    idx
}

/// Quantises values to `bits` and back, returning what the receiver will decode, plus the
/// 8-bit scale (max |v| / 127; 0 for other widths).
pub fn quantize(values: &[f32], bits: ValueBits) -> (Vec<f32>, f32) {
    match bits {
        ValueBits::B32 => (values.to_vec(), 0.0),
        ValueBits::B16 => (
            values
                .iter()
                .map(|v| half::f16::from_f32(*v).to_f32())
                .collect(),
            0.0,
        ),
        ValueBits::B8 => {
            let max = values.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let scale = if max > 0.0 { max / 127.0 } else { 0.0 };
            let q = values
                .iter()
                .map(|v| {
                    if scale > 0.0 {
                        f32::from(q8(*v, scale)) * scale
                    } else {
                        0.0
                    }
                })
                .collect();
            (q, scale)
        }
    }
}

fn q8(v: f32, scale: f32) -> i8 {
    libm::roundf(v / scale).clamp(-127.0, 127.0) as i8
}

fn put_varint(out: &mut Vec<u8>, mut x: u32) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

impl UpdateMessage {
    /// Encodes the message. `values` must already be quantised with [`quantize`] (so the
    /// encoding is exact); `scale` is the 8-bit scale.
    pub fn encode(&self, bits: ValueBits, scale: f32) -> Vec<u8> {
        let dense = self.indices.len() == self.numel as usize;
        let mut out = Vec::with_capacity(22 + self.indices.len() * 3);
        out.extend_from_slice(b"GCU1");
        for x in [
            self.round,
            self.worker,
            self.numel,
            self.indices.len() as u32,
        ] {
            out.extend_from_slice(&x.to_le_bytes());
        }
        out.push(bits.bits() as u8);
        out.push(u8::from(dense));
        if bits == ValueBits::B8 {
            out.extend_from_slice(&scale.to_le_bytes());
        }
        if !dense {
            let mut prev = 0u32;
            for (j, i) in self.indices.iter().enumerate() {
                put_varint(&mut out, if j == 0 { *i } else { i - prev });
                prev = *i;
            }
        }
        for v in &self.values {
            match bits {
                ValueBits::B32 => out.extend_from_slice(&v.to_le_bytes()),
                ValueBits::B16 => out.extend_from_slice(&half::f16::from_f32(*v).to_le_bytes()),
                ValueBits::B8 => out.push(if scale > 0.0 { q8(*v, scale) as u8 } else { 0 }),
            }
        }
        out
    }

    /// Decodes and checks a message (indices ascending and in range, exact length).
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let bad = |m: &str| Error::Training(format!("update message: {m}"));
        let mut r = Reader { bytes, at: 0 };
        if r.take(4).ok_or_else(|| bad("truncated"))? != b"GCU1" {
            return Err(bad("missing GCU1 magic"));
        }
        let mut u = [0u32; 4];
        for x in &mut u {
            *x = r.u32().ok_or_else(|| bad("truncated header"))?;
        }
        let [round, worker, numel, nnz] = u;
        if nnz > numel {
            return Err(bad("more entries than the vector has"));
        }
        let bits = match r.take(1).ok_or_else(|| bad("truncated"))?[0] {
            32 => ValueBits::B32,
            16 => ValueBits::B16,
            8 => ValueBits::B8,
            other => return Err(bad(&format!("unknown value width {other}"))),
        };
        let dense = r.take(1).ok_or_else(|| bad("truncated"))?[0] == 1;
        let scale = if bits == ValueBits::B8 {
            f32::from_bits(r.u32().ok_or_else(|| bad("truncated"))?)
        } else {
            0.0
        };
        let indices: Vec<u32> = if dense {
            if nnz != numel {
                return Err(bad("dense flag with nnz != numel"));
            }
            (0..numel).collect()
        } else {
            let mut idx = Vec::with_capacity(nnz as usize);
            let mut prev = 0u32;
            for j in 0..nnz {
                let gap = r.varint().ok_or_else(|| bad("bad index varint"))?;
                if j > 0 && gap == 0 {
                    return Err(bad("indices not strictly ascending"));
                }
                let i = if j == 0 {
                    gap
                } else {
                    prev.checked_add(gap).ok_or_else(|| bad("index overflow"))?
                };
                if i >= numel {
                    return Err(bad("index out of range"));
                }
                idx.push(i);
                prev = i;
            }
            idx
        };
        let mut values = Vec::with_capacity(nnz as usize);
        for _ in 0..nnz {
            values.push(match bits {
                ValueBits::B32 => f32::from_bits(r.u32().ok_or_else(|| bad("truncated values"))?),
                ValueBits::B16 => {
                    let b = r.take(2).ok_or_else(|| bad("truncated values"))?;
                    half::f16::from_le_bytes([b[0], b[1]]).to_f32()
                }
                ValueBits::B8 => {
                    f32::from(r.take(1).ok_or_else(|| bad("truncated values"))?[0] as i8) * scale
                }
            });
        }
        if r.at != bytes.len() {
            return Err(bad("trailing bytes"));
        }
        Ok(UpdateMessage {
            round,
            worker,
            numel,
            indices,
            values,
        })
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn varint(&mut self) -> Option<u32> {
        let mut x = 0u32;
        for shift in (0..35).step_by(7) {
            let b = self.take(1)?[0];
            x |= u32::from(b & 0x7f).checked_shl(shift)?;
            if b & 0x80 == 0 {
                return Some(x);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_breaks_ties_by_index() {
        let v = [0.5, -2.0, 2.0, 0.1, -2.0, 1.0];
        assert_eq!(top_k(&v, 2), vec![1, 2]);
        assert_eq!(top_k(&v, 3), vec![1, 2, 4]);
        assert_eq!(top_k(&v, 10), vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn messages_round_trip_for_every_width() {
        for bits in [ValueBits::B32, ValueBits::B16, ValueBits::B8] {
            let (values, scale) = quantize(&[0.25, -1.5, 3.0e-3], bits);
            let m = UpdateMessage {
                round: 3,
                worker: 1,
                numel: 70_000,
                indices: vec![5, 200, 69_999],
                values,
            };
            let bytes = m.encode(bits, scale);
            assert_eq!(UpdateMessage::decode(&bytes).unwrap(), m, "{bits:?}");
            assert!(UpdateMessage::decode(&bytes[..bytes.len() - 1]).is_err());
        }
    }

    #[test]
    fn warmup_decays_to_target() {
        assert_eq!(density_ppm(1_000, 4, 0), 250_000);
        assert!(density_ppm(1_000, 4, 2) < 250_000 && density_ppm(1_000, 4, 2) > 1_000);
        assert_eq!(density_ppm(1_000, 4, 4), 1_000);
        assert_eq!(density_ppm(10_000, 0, 0), 10_000);
    }
}
