//! Quantising tokens and packing rows in AVX2, to the bits of the plain loops.

use std::arch::x86_64::{
    __m128i, __m256, __m256i, _mm256_add_epi32, _mm256_and_ps, _mm256_and_si256,
    _mm256_andnot_si256, _mm256_castps256_ps128, _mm256_castps_si256, _mm256_castsi128_si256,
    _mm256_castsi256_ps, _mm256_castsi256_si128, _mm256_cmp_ps, _mm256_cvtps_epi32,
    _mm256_extractf128_ps, _mm256_extracti128_si256, _mm256_inserti128_si256, _mm256_loadu_ps,
    _mm256_loadu_si256, _mm256_max_epi32, _mm256_max_ps, _mm256_min_epi32, _mm256_mul_ps,
    _mm256_packs_epi16, _mm256_packs_epi32, _mm256_permute2f128_ps, _mm256_permute2x128_si256,
    _mm256_permutevar8x32_epi32, _mm256_set1_epi32, _mm256_set1_epi8, _mm256_set1_ps,
    _mm256_setr_epi32, _mm256_setzero_ps, _mm256_shuffle_ps, _mm256_srli_epi16, _mm256_storeu_ps,
    _mm256_storeu_si256, _mm256_unpackhi_epi32, _mm256_unpackhi_epi64, _mm256_unpackhi_ps,
    _mm256_unpacklo_epi32, _mm256_unpacklo_epi64, _mm256_unpacklo_ps, _mm256_xor_si256,
    _mm_add_epi32, _mm_cvtsi128_si32, _mm_cvtss_f32, _mm_loadu_si128, _mm_max_ps, _mm_max_ss,
    _mm_movehl_ps, _mm_shuffle_epi32, _mm_shuffle_ps, _CMP_UNORD_Q,
};

use super::{BLOCK, GROUP, PACKED_BLOCK};

/// [`super::quantise_body`] in vector instructions, to the same bits: the same maximum
/// (NaN left out), scale and products, rounding to nearest with ties to even (the
/// default rounding of `vcvtps2dq`), and NaN products to 0 as `as i8` takes them.
#[target_feature(enable = "avx2,fma")]
pub(super) fn quantise(
    x: &[f32],
    qs: &mut [i8],
    scales: &mut [f32],
    sums: &mut [f32],
    offsets: &mut [i32],
) {
    let magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(i32::MAX));
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let (low, high) = (_mm256_set1_epi32(-127), _mm256_set1_epi32(127));
    for ((((x, q), s), sum), offset) in x
        .chunks_exact(BLOCK)
        .zip(qs.chunks_exact_mut(BLOCK))
        .zip(scales.iter_mut())
        .zip(sums.iter_mut())
        .zip(offsets.iter_mut())
    {
        // SAFETY: `x` is 32 values (`chunks_exact`); load `i` reads values 8i..8i + 8.
        let v: [__m256; 4] =
            std::array::from_fn(|i| unsafe { _mm256_loadu_ps(x.as_ptr().add(8 * i)) });
        // `max(a, m)` gives `m` where `a` is NaN, as `f32::max` leaves NaN out.
        let m = v.iter().fold(_mm256_setzero_ps(), |m, v| {
            _mm256_max_ps(_mm256_and_ps(*v, magnitude), m)
        });
        let four = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        let two = _mm_max_ps(four, _mm_movehl_ps(four, four));
        let amax = _mm_cvtss_f32(_mm_max_ss(two, _mm_shuffle_ps(two, two, 1)));
        let scale = amax / 127.0;
        let inv = _mm256_set1_ps(if scale > 0.0 { 1.0 / scale } else { 0.0 });
        let r = v.map(|v| {
            let p = _mm256_mul_ps(v, inv);
            let nan = _mm256_castps_si256(_mm256_cmp_ps(p, p, _CMP_UNORD_Q));
            let r = _mm256_andnot_si256(nan, _mm256_cvtps_epi32(p));
            _mm256_min_epi32(_mm256_max_epi32(r, low), high)
        });
        let bytes = _mm256_packs_epi16(
            _mm256_packs_epi32(r[0], r[1]),
            _mm256_packs_epi32(r[2], r[3]),
        );
        let bytes = _mm256_permutevar8x32_epi32(bytes, order);
        // SAFETY: `q` is 32 bytes (`chunks_exact_mut`), which an unaligned store writes.
        unsafe { _mm256_storeu_si256(q.as_mut_ptr().cast::<__m256i>(), bytes) };
        let t = _mm256_add_epi32(_mm256_add_epi32(r[0], r[1]), _mm256_add_epi32(r[2], r[3]));
        let t = _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
        let t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0b01_00_11_10));
        let total = _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 0b10_11_00_01)));
        *s = scale;
        *sum = scale * total as f32;
        *offset = 128 * total;
    }
}

/// Vectors `[r0 | r4]`, `[r1 | r5]`, `[r2 | r6]`, `[r3 | r7]` (four 32-bit values a
/// half) to vector `j` = value `j` of each row, rows in order.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn transpose(a: [__m256i; 4]) -> [__m256i; 4] {
    let t0 = _mm256_unpacklo_epi32(a[0], a[1]);
    let t1 = _mm256_unpackhi_epi32(a[0], a[1]);
    let t2 = _mm256_unpacklo_epi32(a[2], a[3]);
    let t3 = _mm256_unpackhi_epi32(a[2], a[3]);
    [
        _mm256_unpacklo_epi64(t0, t2),
        _mm256_unpackhi_epi64(t0, t2),
        _mm256_unpacklo_epi64(t1, t3),
        _mm256_unpackhi_epi64(t1, t3),
    ]
}

/// Stores eight vectors, `v[j]` at bytes `32j..32j + 32` of `out`.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn store(v: [__m256i; 8], out: &mut [u8]) {
    let out = &mut out[..PACKED_BLOCK];
    for (j, v) in v.into_iter().enumerate() {
        // SAFETY: `out` is 256 bytes (sliced above); this writes bytes 32j..32j + 32.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().add(j * 32).cast::<__m256i>(), v) };
    }
}

/// Blocks `8k..8k + 8` of eight rows (a value a block) to `out[b × 8 + i]` for block `b`
/// of row `i`, eight blocks at a time; returns the blocks done (all but fewer than eight).
#[target_feature(enable = "avx2,fma")]
pub(super) fn transpose_group(out: &mut [f32], rows: &[&[f32]; GROUP], blocks: usize) -> usize {
    let full = blocks / 8 * 8;
    if rows.iter().any(|r| r.len() < full) || out.len() < full * GROUP {
        return 0;
    }
    for (b0, out) in (0..full).step_by(8).zip(out.chunks_exact_mut(64)) {
        // SAFETY: each row holds at least `full` values (checked above) and `b0 + 8 ≤ full`.
        let r: [__m256; GROUP] =
            std::array::from_fn(|i| unsafe { _mm256_loadu_ps(rows[i].as_ptr().add(b0)) });
        // For rows 4q..4q + 4: `pairs[4q + m]` interleaves rows 4q + m / 2 × 2 and the next
        // (the low or high values of each half), `s[4q + c]` holds block `c` of the four
        // rows in its low half and block `c + 4` in its high half.
        let pairs: [__m256; 8] = std::array::from_fn(|k| {
            let (q, m) = (k / 4, k % 4);
            let (a, b) = (r[4 * q + m / 2 * 2], r[4 * q + m / 2 * 2 + 1]);
            if m % 2 == 0 {
                _mm256_unpacklo_ps(a, b)
            } else {
                _mm256_unpackhi_ps(a, b)
            }
        });
        let s: [__m256; 8] = std::array::from_fn(|k| {
            let (q, c) = (k / 4, k % 4);
            let (lo, hi) = (pairs[4 * q + c / 2], pairs[4 * q + c / 2 + 2]);
            if c % 2 == 0 {
                _mm256_shuffle_ps(lo, hi, 0x44)
            } else {
                _mm256_shuffle_ps(lo, hi, 0xEE)
            }
        });
        for (b, out) in out.chunks_exact_mut(GROUP).enumerate() {
            let k = b % 4;
            let v = if b < 4 {
                _mm256_permute2f128_ps(s[k], s[k + 4], 0x20)
            } else {
                _mm256_permute2f128_ps(s[k], s[k + 4], 0x31)
            };
            // SAFETY: `out` is 8 values (`chunks_exact_mut`), which an unaligned store writes.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr(), v) };
        }
    }
    full
}

/// Eight 4-bit rows (16 bytes a block) packed into `out`, block after block.
#[target_feature(enable = "avx2,fma")]
pub(super) fn pack_q4(rows: &[&[u8]; GROUP], blocks: usize, out: &mut [u8]) {
    let low = _mm256_set1_epi8(15);
    let rows = rows.map(|r| &r[..blocks * 16]);
    for (b, out) in out.chunks_exact_mut(PACKED_BLOCK).take(blocks).enumerate() {
        // SAFETY: each row is sliced to `blocks` blocks of 16 bytes and `b < blocks`, so
        // the unaligned 128-bit load reads block `b` within it.
        let load =
            |i: usize| unsafe { _mm_loadu_si128(rows[i].as_ptr().add(b * 16).cast::<__m128i>()) };
        let pair =
            |i: usize| _mm256_inserti128_si256(_mm256_castsi128_si256(load(i)), load(i + 4), 1);
        let d = transpose([pair(0), pair(1), pair(2), pair(3)]);
        let lo = d.map(|v| _mm256_and_si256(v, low));
        let hi = d.map(|v| _mm256_and_si256(_mm256_srli_epi16(v, 4), low));
        store(
            [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]],
            out,
        )
    }
}

/// Eight signed 8-bit rows (32 bytes a block) packed into `out`, block after block,
/// plus 128.
#[target_feature(enable = "avx2,fma")]
pub(super) fn pack_q8(rows: &[&[i8]; GROUP], blocks: usize, out: &mut [u8]) {
    let flip = _mm256_set1_epi8(i8::MIN);
    let rows = rows.map(|r| &r[..blocks * BLOCK]);
    for (b, out) in out.chunks_exact_mut(PACKED_BLOCK).take(blocks).enumerate() {
        // SAFETY: each row is sliced to `blocks` blocks of 32 bytes and `b < blocks`, so
        // the unaligned 256-bit load reads block `b` within it.
        let load = |i: usize| unsafe {
            _mm256_loadu_si256(rows[i].as_ptr().add(b * BLOCK).cast::<__m256i>())
        };
        let r: [__m256i; GROUP] = std::array::from_fn(load);
        let first = |i: usize| _mm256_permute2x128_si256(r[i], r[i + 4], 0x20);
        let second = |i: usize| _mm256_permute2x128_si256(r[i], r[i + 4], 0x31);
        let a = transpose([first(0), first(1), first(2), first(3)]);
        let c = transpose([second(0), second(1), second(2), second(3)]);
        let v = [a[0], a[1], a[2], a[3], c[0], c[1], c[2], c[3]];
        store(v.map(|v| _mm256_xor_si256(v, flip)), out)
    }
}
