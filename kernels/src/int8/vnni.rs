//! [`super::product`] in AVX-512 VNNI's `vpdpbusd`: four byte products summed into each
//! 32-bit lane in one instruction.

use std::arch::x86_64::{
    __m256, __m256i, _mm256_add_epi32, _mm256_cvtepi32_ps, _mm256_dpbusd_epi32, _mm256_fmadd_ps,
    _mm256_loadu_ps, _mm256_loadu_si256, _mm256_mul_ps, _mm256_set1_epi32, _mm256_set1_ps,
    _mm256_setzero_ps, _mm256_setzero_si256, _mm256_storeu_ps, _mm256_sub_epi32,
};

use super::{PackedRows, QuantisedTokens, BLOCK, GROUP, PACKED_BLOCK, TILE};

#[target_feature(enable = "avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni")]
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
#[target_feature(enable = "avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni")]
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
    let mut acc = [_mm256_setzero_ps(); T];
    for b in 0..blocks {
        let v = &packed[b * PACKED_BLOCK..][..PACKED_BLOCK];
        // SAFETY: `v` is 256 bytes (sliced above); load `j` reads bytes 32j..32j + 32.
        let v: [__m256i; 8] = std::array::from_fn(|j| unsafe {
            _mm256_loadu_si256(v.as_ptr().add(j * 32).cast::<__m256i>())
        });
        let (d, m) = (&scales[b * GROUP..][..GROUP], &mins[b * GROUP..][..GROUP]);
        // SAFETY: `d` and `m` are 8 values each (sliced above).
        let (d, m) = unsafe { (_mm256_loadu_ps(d.as_ptr()), _mm256_loadu_ps(m.as_ptr())) };
        // The tile's tokens in this block, side by side.
        let at = b * tokens + t0;
        let qs = &x.qs[at * BLOCK..(at + T) * BLOCK];
        let (Ok(x_scales), Ok(x_sums), Ok(x_offsets)) = (
            <&[f32; T]>::try_from(&x.scales[at..at + T]),
            <&[f32; T]>::try_from(&x.sums[at..at + T]),
            <&[i32; T]>::try_from(&x.offsets[at..at + T]),
        ) else {
            return;
        };
        #[allow(clippy::needless_range_loop)]
        for t in 0..T {
            let (scale, sum, offset) = (x_scales[t], x_sums[t], x_offsets[t]);
            // SAFETY: `t < T`, so the 32 bytes from `t × 32` lie within `qs` (`T × 32`
            // bytes, sliced above).
            let xq = unsafe { qs.as_ptr().add(t * BLOCK) };
            // Two chains of four dependent sums rather than one of eight: twice the
            // products in flight.
            let mut dots = [_mm256_setzero_si256(); 2];
            for (j, v) in v.iter().enumerate() {
                // SAFETY: bytes 4j..4j + 4 of the 32 at `xq` (see above).
                let four = unsafe { xq.add(j * 4).cast::<i32>().read_unaligned() };
                dots[j % 2] = _mm256_dpbusd_epi32(dots[j % 2], *v, _mm256_set1_epi32(four));
            }
            let mut dot = _mm256_add_epi32(dots[0], dots[1]);
            if EIGHT_BIT {
                dot = _mm256_sub_epi32(dot, _mm256_set1_epi32(offset));
            }
            let ds = _mm256_mul_ps(d, _mm256_set1_ps(scale));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), ds, acc[t]);
            if !EIGHT_BIT {
                acc[t] = _mm256_fmadd_ps(m, _mm256_set1_ps(sum), acc[t]);
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
#[target_feature(enable = "avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni")]
fn store(lanes: &mut [f32; GROUP], v: __m256) {
    // SAFETY: `lanes` is 8 values, which an unaligned store writes.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), v) }
}
