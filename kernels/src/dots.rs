//! A row of 4- or 8-bit blocks times a few tokens at once: each block is unpacked to f32
//! once for all of them, and each token keeps one vector of sums, added up once a row.
//!
//! Dotting the row with each token in turn (the plain loops in `lib.rs`) unpacked every
//! block again for every token and summed a 16-lane accumulator one lane at a time at the
//! end of each row; for rows of 576 values (18 blocks) that sum alone took about a quarter
//! of the dot product's time.

use super::BLOCK;

/// Most tokens one pass over a row serves: six sums, the four unpacked quarters of a
/// block, its scale and a temporary stay within AVX2's sixteen vector registers. Measured
/// against passes of four (2 threads, five pairs): 5 sequences decode at 181 tokens/s
/// against 158, 6 at 180 against 160.
const TOKENS_A_PASS: usize = 6;

/// The token groups a row is dotted with: `n` tokens in passes of at most
/// [`TOKENS_A_PASS`], as even as can be (7 → 4 + 3, not 6 + 1: a pass costs its unpacking
/// whatever its number of tokens).
fn passes(n: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let count = n.div_ceil(TOKENS_A_PASS);
    (0..count).map(move |p| p * n / count..(p + 1) * n / count)
}

/// The blocks every one of `xs` holds whole, at most `blocks`.
fn common_blocks(blocks: usize, xs: &[&[f32]]) -> usize {
    xs.iter().fold(blocks, |b, x| b.min(x.len() / BLOCK))
}

/// `out[t] = dot_q4(scales, mins, qs, xs[t], sums[t])` for every token `t` (see
/// [`super::dot_q4`]; `out.len()` tokens, at most as many as `xs` and `sums` hold), over the
/// blocks that every input holds: blocks past the shortest token are left out for all of
/// them, in both builds.
pub fn dot_q4_tokens(
    scales: &[f32],
    mins: &[f32],
    qs: &[u8],
    xs: &[&[f32]],
    sums: &[&[f32]],
    out: &mut [f32],
) {
    let n = out.len().min(xs.len()).min(sums.len());
    let (xs, sums) = (&xs[..n], &sums[..n]);
    let blocks = sums.iter().fold(
        common_blocks(scales.len().min(mins.len()).min(qs.len() / 16), xs),
        |b, s| b.min(s.len()),
    );
    let (scales, mins, qs) = (&scales[..blocks], &mins[..blocks], &qs[..blocks * 16]);
    #[cfg(target_arch = "x86_64")]
    if super::wide() {
        for p in passes(n) {
            let (xs, sums, out) = (&xs[p.clone()], &sums[p.clone()], &mut out[p]);
            // SAFETY (each arm): the CPU has AVX2 and FMA (checked just above), which is all
            // that calling a function compiled with `target_feature(enable = "avx2,fma")`
            // requires.
            #[allow(unsafe_code)]
            match out.len() {
                1 => unsafe { avx2::q4::<1>(scales, mins, qs, xs, sums, out) },
                2 => unsafe { avx2::q4::<2>(scales, mins, qs, xs, sums, out) },
                3 => unsafe { avx2::q4::<3>(scales, mins, qs, xs, sums, out) },
                4 => unsafe { avx2::q4::<4>(scales, mins, qs, xs, sums, out) },
                5 => unsafe { avx2::q4::<5>(scales, mins, qs, xs, sums, out) },
                _ => unsafe { avx2::q4::<TOKENS_A_PASS>(scales, mins, qs, xs, sums, out) },
            }
        }
        return;
    }
    for t in 0..n {
        out[t] = super::q4_body(scales, mins, qs, xs[t], sums[t]);
    }
}

/// `out[t] = dot_q8(scales, qs, xs[t])` for every token `t` (see [`super::dot_q8`];
/// `out.len()` tokens, at most as many as `xs` holds), over the blocks that every input
/// holds.
pub fn dot_q8_tokens(scales: &[f32], qs: &[i8], xs: &[&[f32]], out: &mut [f32]) {
    let n = out.len().min(xs.len());
    let xs = &xs[..n];
    let blocks = common_blocks(scales.len().min(qs.len() / BLOCK), xs);
    let (scales, qs) = (&scales[..blocks], &qs[..blocks * BLOCK]);
    #[cfg(target_arch = "x86_64")]
    if super::wide() {
        for p in passes(n) {
            let (xs, out) = (&xs[p.clone()], &mut out[p]);
            // SAFETY (each arm): the CPU has AVX2 and FMA (checked just above).
            #[allow(unsafe_code)]
            match out.len() {
                1 => unsafe { avx2::q8::<1>(scales, qs, xs, out) },
                2 => unsafe { avx2::q8::<2>(scales, qs, xs, out) },
                3 => unsafe { avx2::q8::<3>(scales, qs, xs, out) },
                4 => unsafe { avx2::q8::<4>(scales, qs, xs, out) },
                5 => unsafe { avx2::q8::<5>(scales, qs, xs, out) },
                _ => unsafe { avx2::q8::<TOKENS_A_PASS>(scales, qs, xs, out) },
            }
        }
        return;
    }
    for t in 0..n {
        out[t] = super::q8_body(scales, qs, xs[t]);
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::{
        __m128i, __m256, _mm256_castps256_ps128, _mm256_cvtepi32_ps, _mm256_cvtepi8_epi32,
        _mm256_cvtepu8_epi32, _mm256_extractf128_ps, _mm256_fmadd_ps, _mm256_loadu_ps,
        _mm256_mul_ps, _mm256_set1_ps, _mm256_setzero_ps, _mm_add_ps, _mm_add_ss, _mm_and_si128,
        _mm_cvtss_f32, _mm_loadu_si128, _mm_movehl_ps, _mm_set1_epi8, _mm_shuffle_ps,
        _mm_srli_epi16, _mm_srli_si128,
    };

    use super::BLOCK;

    /// The sum of the eight lanes of `v`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn sum8(v: __m256) -> f32 {
        let four = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let two = _mm_add_ps(four, _mm_movehl_ps(four, four));
        _mm_cvtss_f32(_mm_add_ss(two, _mm_shuffle_ps(two, two, 1)))
    }

    /// `Σ_k w[k] · x[8k..8k + 8]` lane by lane.
    ///
    /// # Safety
    /// `x` points at 32 readable values.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn block_products(w: &[__m256; 4], x: *const f32) -> __m256 {
        // SAFETY: the caller vouches for 32 values at `x`; each load reads 8 of them.
        unsafe {
            let p = _mm256_mul_ps(w[0], _mm256_loadu_ps(x));
            let p = _mm256_fmadd_ps(w[1], _mm256_loadu_ps(x.add(8)), p);
            let p = _mm256_fmadd_ps(w[2], _mm256_loadu_ps(x.add(16)), p);
            _mm256_fmadd_ps(w[3], _mm256_loadu_ps(x.add(24)), p)
        }
    }

    /// A row of 4-bit blocks times `T` tokens (`xs`, `sums` and `out` at least `T` long).
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn q4<const T: usize>(
        scales: &[f32],
        mins: &[f32],
        qs: &[u8],
        xs: &[&[f32]],
        sums: &[&[f32]],
        out: &mut [f32],
    ) {
        let (xs, sums, out) = (&xs[..T], &sums[..T], &mut out[..T]);
        let blocks = sums.iter().fold(
            super::common_blocks(scales.len().min(mins.len()).min(qs.len() / 16), xs),
            |b, s| b.min(s.len()),
        );
        let x: [*const f32; T] = std::array::from_fn(|t| xs[t].as_ptr());
        let low = _mm_set1_epi8(15);
        let mut acc = [_mm256_setzero_ps(); T];
        for (b, (d, q)) in scales[..blocks].iter().zip(qs.chunks_exact(16)).enumerate() {
            // SAFETY: `q` is 16 bytes (`chunks_exact(16)`), which an unaligned load reads.
            let q = unsafe { _mm_loadu_si128(q.as_ptr().cast::<__m128i>()) };
            // Values 0..16 are the low nibbles, 16..32 the high ones.
            let (lo, hi) = (
                _mm_and_si128(q, low),
                _mm_and_si128(_mm_srli_epi16(q, 4), low),
            );
            let w = [lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)]
                .map(|v| _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v)));
            let d = _mm256_set1_ps(*d);
            for t in 0..T {
                // SAFETY: `b < blocks` and every token holds `blocks` whole blocks.
                let p = unsafe { block_products(&w, x[t].add(b * BLOCK)) };
                acc[t] = _mm256_fmadd_ps(d, p, acc[t]);
            }
        }
        // The minimums: `Σ_b mins[b] · sums[t][b]`, eight blocks a vector.
        let whole = blocks / 8 * 8;
        for (b, m) in mins[..whole].chunks_exact(8).enumerate() {
            // SAFETY: `m` is 8 values (`chunks_exact(8)`).
            let m = unsafe { _mm256_loadu_ps(m.as_ptr()) };
            for t in 0..T {
                let s = &sums[t][b * 8..b * 8 + 8];
                // SAFETY: `s` is 8 values (sliced just above).
                acc[t] = _mm256_fmadd_ps(m, unsafe { _mm256_loadu_ps(s.as_ptr()) }, acc[t]);
            }
        }
        for t in 0..T {
            let tail = mins[whole..blocks]
                .iter()
                .zip(&sums[t][whole..blocks])
                .fold(0.0f32, |a, (m, s)| m.mul_add(*s, a));
            out[t] = sum8(acc[t]) + tail;
        }
    }

    /// A row of 8-bit blocks times `T` tokens (`xs` and `out` at least `T` long).
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn q8<const T: usize>(scales: &[f32], qs: &[i8], xs: &[&[f32]], out: &mut [f32]) {
        let (xs, out) = (&xs[..T], &mut out[..T]);
        let blocks = super::common_blocks(scales.len().min(qs.len() / BLOCK), xs);
        let x: [*const f32; T] = std::array::from_fn(|t| xs[t].as_ptr());
        let mut acc = [_mm256_setzero_ps(); T];
        for (b, (d, q)) in scales[..blocks]
            .iter()
            .zip(qs.chunks_exact(BLOCK))
            .enumerate()
        {
            // SAFETY: `q` is 32 bytes (`chunks_exact(BLOCK)`); each load reads 16 of them.
            let (first, second) = unsafe {
                let p = q.as_ptr().cast::<__m128i>();
                (_mm_loadu_si128(p), _mm_loadu_si128(p.add(1)))
            };
            let w = [
                first,
                _mm_srli_si128(first, 8),
                second,
                _mm_srli_si128(second, 8),
            ]
            .map(|v| _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)));
            let d = _mm256_set1_ps(*d);
            for t in 0..T {
                // SAFETY: `b < blocks` and every token holds `blocks` whole blocks.
                let p = unsafe { block_products(&w, x[t].add(b * BLOCK)) };
                acc[t] = _mm256_fmadd_ps(d, p, acc[t]);
            }
        }
        for t in 0..T {
            out[t] = sum8(acc[t]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| (((i + seed) * 37 % 101) as f32 - 50.0) / 25.0)
            .collect()
    }

    fn close(a: f32, b: f32) -> bool {
        (a - b).abs() <= 1e-4 * b.abs().max(1.0)
    }

    #[test]
    fn a_row_times_many_tokens_gives_each_token_its_own_dot_product() {
        // 18 blocks (the chat model's 576 values: two vectors of minimums and a tail of two)
        // and 3 (the tail alone), with 1 to 9 tokens (passes of 1 to 6; 7 as 4 + 3).
        for blocks in [18, 3] {
            let cols = blocks * BLOCK;
            let (scales, mins) = (values(blocks, 1), values(blocks, 2));
            let q4: Vec<u8> = (0..blocks * 16).map(|i| (i * 73 % 256) as u8).collect();
            let q8: Vec<i8> = (0..cols).map(|i| (i * 91 % 256) as u8 as i8).collect();
            for tokens in 1..=9 {
                let xs: Vec<Vec<f32>> = (0..tokens).map(|t| values(cols, 5 + t)).collect();
                let sums: Vec<Vec<f32>> = xs
                    .iter()
                    .map(|x| x.chunks(BLOCK).map(|b| b.iter().sum()).collect())
                    .collect();
                let x_refs: Vec<&[f32]> = xs.iter().map(Vec::as_slice).collect();
                let sum_refs: Vec<&[f32]> = sums.iter().map(Vec::as_slice).collect();
                let mut out = vec![f32::NAN; tokens];
                dot_q4_tokens(&scales, &mins, &q4, &x_refs, &sum_refs, &mut out);
                for t in 0..tokens {
                    let want: f32 = (0..cols)
                        .map(|i| {
                            let byte = q4[i / BLOCK * 16 + i % 16];
                            let q = if i % BLOCK < 16 { byte & 15 } else { byte >> 4 };
                            (f32::from(q) * scales[i / BLOCK] + mins[i / BLOCK]) * xs[t][i]
                        })
                        .sum();
                    assert!(
                        close(out[t], want),
                        "q4 {blocks} blocks, token {t} of {tokens}"
                    );
                    let plain = super::super::q4_body(&scales, &mins, &q4, &xs[t], &sums[t]);
                    assert!(close(out[t], plain));
                }
                let mut out = vec![f32::NAN; tokens];
                dot_q8_tokens(&scales, &q8, &x_refs, &mut out);
                for t in 0..tokens {
                    let want: f32 = (0..cols)
                        .map(|i| f32::from(q8[i]) * scales[i / BLOCK] * xs[t][i])
                        .sum();
                    assert!(
                        close(out[t], want),
                        "q8 {blocks} blocks, token {t} of {tokens}"
                    );
                }
            }
        }
    }

    #[test]
    fn blocks_past_the_shortest_input_are_left_out() {
        let (scales, mins) = (values(4, 1), values(4, 2));
        let q4: Vec<u8> = (0..4 * 16).map(|i| (i * 29 % 256) as u8).collect();
        let long = values(4 * BLOCK, 3);
        let short = long[..2 * BLOCK].to_vec();
        let sums: Vec<f32> = long.chunks(BLOCK).map(|b| b.iter().sum()).collect();
        let mut both = [0.0; 2];
        dot_q4_tokens(
            &scales,
            &mins,
            &q4,
            &[&short, &long],
            &[&sums, &sums],
            &mut both,
        );
        let mut alone = [0.0; 1];
        dot_q4_tokens(
            &scales[..2],
            &mins[..2],
            &q4[..32],
            &[&long],
            &[&sums],
            &mut alone,
        );
        assert!(close(both[0], alone[0]));
        assert!(close(both[1], alone[0]));
    }
}
