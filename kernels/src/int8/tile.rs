//! What the vector builds of [`super::product`] share around their integer sums: a group's
//! packed blocks, a tile's tokens in one block, and storing a tile's results.

use std::arch::x86_64::{__m256, __m256i, _mm256_loadu_ps, _mm256_loadu_si256, _mm256_storeu_ps};

use std::ops::Range;

use super::{PackedRows, QuantisedTokens, BLOCK, GROUP, PACKED_BLOCK, TILE};

/// `tile(g, t0, n)` for each group `g` of `rows` rows and each tile of `n` tokens (up to
/// [`TILE`]) of `tokens` from `t0`: group after group, a group's tiles in order.
#[inline(always)]
pub(super) fn each_tile(
    rows: usize,
    tokens: Range<usize>,
    mut tile: impl FnMut(usize, usize, usize),
) {
    for g in 0..rows.div_ceil(GROUP) {
        for (t0, n) in tiles(tokens.clone(), TILE) {
            tile(g, t0, n);
        }
    }
}

/// `tokens` in tiles of `size` (the last may be shorter): each tile's first token and length.
#[inline(always)]
pub(super) fn tiles(tokens: Range<usize>, size: usize) -> impl Iterator<Item = (usize, usize)> {
    let end = tokens.end;
    tokens.step_by(size).map(move |t0| (t0, size.min(end - t0)))
}

/// Group `g` of a matrix's packed rows.
pub(super) struct Group<'a> {
    packed: &'a [u8],
    scales: &'a [f32],
    mins: &'a [f32],
}

impl<'a> Group<'a> {
    pub(super) fn new(w: &'a PackedRows, g: usize) -> Group<'a> {
        let blocks = w.blocks;
        Group {
            packed: &w.bytes[g * blocks * PACKED_BLOCK..(g + 1) * blocks * PACKED_BLOCK],
            scales: &w.scales[g * blocks * GROUP..(g + 1) * blocks * GROUP],
            mins: &w.mins[g * blocks * GROUP..(g + 1) * blocks * GROUP],
        }
    }

    /// Block `b`'s eight packed vectors, its eight rows' scales and their minimums.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn block(&self, b: usize) -> ([__m256i; 8], __m256, __m256) {
        let v = &self.packed[b * PACKED_BLOCK..][..PACKED_BLOCK];
        // SAFETY: `v` is 256 bytes (sliced above); load `j` reads bytes 32j..32j + 32.
        let v: [__m256i; 8] = std::array::from_fn(|j| unsafe {
            _mm256_loadu_si256(v.as_ptr().add(j * 32).cast::<__m256i>())
        });
        let (d, m) = (
            &self.scales[b * GROUP..][..GROUP],
            &self.mins[b * GROUP..][..GROUP],
        );
        // SAFETY: `d` and `m` are 8 values each (sliced above).
        let (d, m) = unsafe { (_mm256_loadu_ps(d.as_ptr()), _mm256_loadu_ps(m.as_ptr())) };
        (v, d, m)
    }
}

/// Tokens `t0..t0 + T` of `x` in block `b`, side by side.
pub(super) struct Tokens<'a, const T: usize> {
    qs: &'a [[i8; BLOCK]; T],
    pub(super) scales: &'a [f32; T],
    pub(super) sums: &'a [f32; T],
    pub(super) offsets: &'a [i32; T],
}

impl<'a, const T: usize> Tokens<'a, T> {
    /// `None` when the tokens reach past `x`'s.
    pub(super) fn new(x: &'a QuantisedTokens, b: usize, t0: usize) -> Option<Tokens<'a, T>> {
        let at = b * x.tokens + t0;
        Some(Tokens {
            qs: x
                .qs
                .get(at * BLOCK..(at + T) * BLOCK)?
                .as_chunks()
                .0
                .try_into()
                .ok()?,
            scales: x.scales.get(at..at + T)?.try_into().ok()?,
            sums: x.sums.get(at..at + T)?.try_into().ok()?,
            offsets: x.offsets.get(at..at + T)?.try_into().ok()?,
        })
    }

    /// Token `t`'s values `4j..4j + 4` in the block, as one 32-bit value, for `t < T` and
    /// `j < 8`.
    #[inline(always)]
    pub(super) fn four(&self, t: usize, j: usize) -> i32 {
        let four = &self.qs[t][j * 4..][..4];
        i32::from_le_bytes([four[0], four[1], four[2], four[3]].map(|q| q as u8))
    }
}

/// Stores a tile's sums: token `t`'s eight rows of group `g` at
/// `out[(t0 − first + t) × stride + 8g..]`, the rows the group holds.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(super) fn store(
    acc: &[__m256],
    (w, g): (&PackedRows, usize),
    (t0, first): (usize, usize),
    out: &mut [f32],
    stride: usize,
) {
    let rows = GROUP.min(w.rows - g * GROUP);
    for (t, acc) in acc.iter().enumerate() {
        let at = (t0 - first + t) * stride + g * GROUP;
        if let Some(out) = out.get_mut(at..at + GROUP).filter(|_| rows == GROUP) {
            // SAFETY: `out` is 8 values, which an unaligned store writes.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr(), *acc) };
            continue;
        }
        let mut lanes = [0.0f32; GROUP];
        // SAFETY: `lanes` is 8 values, which an unaligned store writes.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), *acc) };
        out[at..at + rows].copy_from_slice(&lanes[..rows]);
    }
}
