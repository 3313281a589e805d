//! [`super::product`] in AVX2's byte multiply-adds, for CPUs without VNNI: `vpmaddubsw`
//! multiplies 32 unsigned bytes by 32 signed ones and adds neighbours into sixteen 16-bit
//! sums, `vpmaddwd` by ones adds those pairs into eight 32-bit sums, one a row.
//!
//! The 16-bit sums saturate, so what goes into them is bounded: a 4-bit row's pair of
//! products is at most 2 × 15 × 127 = 3,810, and a block's eight such sums (30,480) are
//! added in 16 bits before widening once. An 8-bit row stored plus 128 would reach
//! 2 × 255 × 127 and saturate: it is multiplied as its magnitude (at most 128) by the token's
//! value carrying the weight's sign, 2 × 128 × 127 = 32,512 at most, and each product
//! widened. Every sum is exact, so the bits are those of the plain loops and of VNNI.

use std::arch::x86_64::{
    __m256, __m256i, _mm256_abs_epi8, _mm256_add_epi16, _mm256_add_epi32, _mm256_cvtepi32_ps,
    _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_loadu_si256, _mm256_madd_epi16, _mm256_maddubs_epi16,
    _mm256_mul_ps, _mm256_set1_epi16, _mm256_set1_epi32, _mm256_set1_epi8, _mm256_set1_ps,
    _mm256_setzero_ps, _mm256_setzero_si256, _mm256_sign_epi8, _mm256_storeu_ps, _mm256_xor_si256,
};

use super::{PackedRows, QuantisedTokens, BLOCK, GROUP, PACKED_BLOCK, TILE};

#[target_feature(enable = "avx2,fma")]
pub(super) fn product(
    w: &PackedRows,
    x: &QuantisedTokens,
    tokens: std::ops::Range<usize>,
    out: &mut [f32],
    stride: usize,
) {
    let first = tokens.start;
    for g in 0..w.rows.div_ceil(GROUP) {
        let mut t0 = first;
        while t0 < tokens.end {
            let n = TILE.min(tokens.end - t0);
            match (n, w.eight_bit) {
                (1, false) => tile::<1, false>(w, x, g, t0, first, out, stride),
                (2, false) => tile::<2, false>(w, x, g, t0, first, out, stride),
                (3, false) => tile::<3, false>(w, x, g, t0, first, out, stride),
                (4, false) => tile::<4, false>(w, x, g, t0, first, out, stride),
                (5, false) => tile::<5, false>(w, x, g, t0, first, out, stride),
                (6, false) => tile::<6, false>(w, x, g, t0, first, out, stride),
                (7, false) => tile::<7, false>(w, x, g, t0, first, out, stride),
                (_, false) => tile::<TILE, false>(w, x, g, t0, first, out, stride),
                (1, true) => tile::<1, true>(w, x, g, t0, first, out, stride),
                (2, true) => tile::<2, true>(w, x, g, t0, first, out, stride),
                (3, true) => tile::<3, true>(w, x, g, t0, first, out, stride),
                (4, true) => tile::<4, true>(w, x, g, t0, first, out, stride),
                (5, true) => tile::<5, true>(w, x, g, t0, first, out, stride),
                (6, true) => tile::<6, true>(w, x, g, t0, first, out, stride),
                (7, true) => tile::<7, true>(w, x, g, t0, first, out, stride),
                (_, true) => tile::<TILE, true>(w, x, g, t0, first, out, stride),
            }
            t0 += n;
        }
    }
}

/// Group `g` of `w` times tokens `t0..t0 + T` of `x` (all present: the caller's loop), into
/// `out` from token `first` on.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn tile<const T: usize, const EIGHT_BIT: bool>(
    w: &PackedRows,
    x: &QuantisedTokens,
    g: usize,
    t0: usize,
    first: usize,
    out: &mut [f32],
    stride: usize,
) {
    let blocks = w.blocks;
    let packed = &w.bytes[g * blocks * PACKED_BLOCK..(g + 1) * blocks * PACKED_BLOCK];
    let scales = &w.scales[g * blocks * GROUP..(g + 1) * blocks * GROUP];
    let mins = &w.mins[g * blocks * GROUP..(g + 1) * blocks * GROUP];
    let tokens = x.tokens;
    let ones = _mm256_set1_epi16(1);
    let flip = _mm256_set1_epi8(i8::MIN);
    let mut acc = [_mm256_setzero_ps(); T];
    for b in 0..blocks {
        let v = &packed[b * PACKED_BLOCK..][..PACKED_BLOCK];
        // SAFETY: `v` is 256 bytes (sliced above); load `j` reads bytes 32j..32j + 32.
        let v: [__m256i; 8] = std::array::from_fn(|j| unsafe {
            _mm256_loadu_si256(v.as_ptr().add(j * 32).cast::<__m256i>())
        });
        // 8-bit rows: the signed weights, and their magnitudes as unsigned bytes (128 for
        // −128 too).
        let signed = if EIGHT_BIT {
            v.map(|v| _mm256_xor_si256(v, flip))
        } else {
            v
        };
        let magnitudes = if EIGHT_BIT {
            signed.map(|s| _mm256_abs_epi8(s))
        } else {
            v
        };
        let (d, m) = (&scales[b * GROUP..][..GROUP], &mins[b * GROUP..][..GROUP]);
        // SAFETY: `d` and `m` are 8 values each (sliced above).
        let (d, m) = unsafe { (_mm256_loadu_ps(d.as_ptr()), _mm256_loadu_ps(m.as_ptr())) };
        let at = b * tokens + t0;
        let qs = &x.qs[at * BLOCK..(at + T) * BLOCK];
        let (Ok(x_scales), Ok(x_sums)) = (
            <&[f32; T]>::try_from(&x.scales[at..at + T]),
            <&[f32; T]>::try_from(&x.sums[at..at + T]),
        ) else {
            return;
        };
        #[allow(clippy::needless_range_loop)]
        for t in 0..T {
            // SAFETY: `t < T`, so the 32 bytes from `t × 32` lie within `qs` (`T × 32`
            // bytes, sliced above).
            let xq = unsafe { qs.as_ptr().add(t * BLOCK) };
            // SAFETY: bytes 4j..4j + 4 of the 32 at `xq` (see above), for `j < 8`.
            let four = |j: usize| unsafe {
                _mm256_set1_epi32(xq.add(j * 4).cast::<i32>().read_unaligned())
            };
            let dot = if EIGHT_BIT {
                let mut dots = [_mm256_setzero_si256(); 2];
                for j in 0..8 {
                    let x = _mm256_sign_epi8(four(j), signed[j]);
                    let pairs = _mm256_maddubs_epi16(magnitudes[j], x);
                    dots[j % 2] = _mm256_add_epi32(dots[j % 2], _mm256_madd_epi16(pairs, ones));
                }
                _mm256_add_epi32(dots[0], dots[1])
            } else {
                let mut pairs = [_mm256_setzero_si256(); 2];
                for (j, v) in v.iter().enumerate() {
                    pairs[j % 2] =
                        _mm256_add_epi16(pairs[j % 2], _mm256_maddubs_epi16(*v, four(j)));
                }
                _mm256_madd_epi16(_mm256_add_epi16(pairs[0], pairs[1]), ones)
            };
            let ds = _mm256_mul_ps(d, _mm256_set1_ps(x_scales[t]));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), ds, acc[t]);
            if !EIGHT_BIT {
                acc[t] = _mm256_fmadd_ps(m, _mm256_set1_ps(x_sums[t]), acc[t]);
            }
        }
    }
    let rows = GROUP.min(w.rows - g * GROUP);
    for (t, acc) in acc.iter().enumerate() {
        let at = (t0 - first + t) * stride + g * GROUP;
        if let Ok(lanes) = <&mut [f32; GROUP]>::try_from(&mut out[at..at + rows]) {
            store(lanes, *acc);
        } else {
            let mut lanes = [0.0f32; GROUP];
            store(&mut lanes, *acc);
            out[at..at + rows].copy_from_slice(&lanes[..rows]);
        }
    }
}

#[inline]
#[target_feature(enable = "avx2,fma")]
fn store(lanes: &mut [f32; GROUP], v: __m256) {
    // SAFETY: `lanes` is 8 values, which an unaligned store writes.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), v) }
}
