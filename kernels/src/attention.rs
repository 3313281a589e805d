//! The two inner loops of a decoder's attention over cached keys and values: one query's
//! scores against every cached key ([`scaled_dots`]), and the softmax-weighted sum of the
//! cached values ([`add_weighted_rows`]). The cache holds a token's keys (or values) for
//! every head side by side, so a head's rows are `stride` values apart.
//!
//! They replace a call of [`dot_f32`](crate::dot_f32) or [`add_scaled`](crate::add_scaled)
//! a row, which at a 1,000-token context took about half of a prefill (the softmax between
//! them is [`softmax`](crate::softmax)'s, in vectors too): one CPU check for
//! all rows instead of one a row, the weighted sum held in registers across the rows, and
//! in the AVX2 build keys scored eight at a time, their sums added across in vectors rather
//! than lane by lane. The weighted sum gives the bits of the calls it replaces. A score's
//! bits depend on where its key falls (in a group of eight or after the last whole group),
//! which a query's position alone decides: a decoding step, a prompt read in chunks and a
//! verifier's single pass give a token the same attention.

use crate::{f32_body, madd};

/// Output values added up in registers at once.
const GROUP: usize = 64;

#[inline(always)]
fn scaled_dots_body<const FMA: bool>(
    x: &[f32],
    rows: &[f32],
    stride: usize,
    scale: f32,
    out: &mut [f32],
) {
    let d = x.len();
    for (s, o) in out.iter_mut().enumerate() {
        *o = f32_body::<FMA>(x, &rows[s * stride..s * stride + d]) * scale;
    }
}

#[inline(always)]
fn add_weighted_rows_body<const FMA: bool>(
    out: &mut [f32],
    weights: &[f32],
    rows: &[f32],
    stride: usize,
) {
    let mut col = 0;
    for group in out.chunks_mut(GROUP) {
        if group.len() == GROUP {
            let mut acc = [0.0f32; GROUP];
            acc.copy_from_slice(group);
            for (s, &w) in weights.iter().enumerate() {
                let row = &rows[s * stride + col..s * stride + col + GROUP];
                for j in 0..GROUP {
                    acc[j] = madd::<FMA>(w, row[j], acc[j]);
                }
            }
            group.copy_from_slice(&acc);
        } else {
            for (s, &w) in weights.iter().enumerate() {
                let row = &rows[s * stride + col..s * stride + col + group.len()];
                for (o, v) in group.iter_mut().zip(row) {
                    *o = madd::<FMA>(w, *v, *o);
                }
            }
        }
        col += group.len();
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m256, _mm256_add_ps, _mm256_fmadd_ps, _mm256_hadd_ps, _mm256_loadu_ps, _mm256_mul_ps,
        _mm256_permute2f128_ps, _mm256_set1_ps, _mm256_setzero_ps, _mm256_storeu_ps,
    };

    /// Keys scored at once: one vector of sums each, added across in one vector.
    const KEYS: usize = 8;

    /// Rows of a width that is a whole number of vectors go eight at a time: each row's
    /// eight running sums in a vector of its own, then the eight vectors added across
    /// into one vector of eight scores (three rounds of pairwise adds). The rest, and
    /// other widths, as [`super::scaled_dots_body`].
    #[target_feature(enable = "avx2,fma")]
    #[allow(unsafe_code)]
    pub(super) fn scaled_dots(x: &[f32], rows: &[f32], stride: usize, scale: f32, out: &mut [f32]) {
        let d = x.len();
        let whole = if d % 8 == 0 {
            out.len() / KEYS * KEYS
        } else {
            0
        };
        let (eights, rest) = out.split_at_mut(whole);
        let scale_v = _mm256_set1_ps(scale);
        for (g, o) in eights.chunks_exact_mut(KEYS).enumerate() {
            let first = g * KEYS * stride;
            // The caller checked that `rows` holds `out.len()` rows of `d` values, `stride`
            // apart; this block's eight are among them.
            let block = &rows[first..first + (KEYS - 1) * stride + d];
            let mut acc: [__m256; KEYS] = [_mm256_setzero_ps(); KEYS];
            for c in (0..d).step_by(8) {
                // SAFETY: `c + 8 <= d = x.len()`.
                let xv = unsafe { _mm256_loadu_ps(x[c..c + 8].as_ptr()) };
                for (k, a) in acc.iter_mut().enumerate() {
                    let at = k * stride + c;
                    // SAFETY: `at + 8 <= (KEYS - 1) × stride + d = block.len()`.
                    let r = unsafe { _mm256_loadu_ps(block[at..at + 8].as_ptr()) };
                    *a = _mm256_fmadd_ps(xv, r, *a);
                }
            }
            // Lane i of `pairs[j]` holds, per 128-bit half, partial sums of rows 2j, 2j + 1.
            let pairs = [
                _mm256_hadd_ps(acc[0], acc[1]),
                _mm256_hadd_ps(acc[2], acc[3]),
                _mm256_hadd_ps(acc[4], acc[5]),
                _mm256_hadd_ps(acc[6], acc[7]),
            ];
            // Per half: rows 0..4 and rows 4..8, each lane one row's half-sum.
            let quads = [
                _mm256_hadd_ps(pairs[0], pairs[1]),
                _mm256_hadd_ps(pairs[2], pairs[3]),
            ];
            let low = _mm256_permute2f128_ps::<0x20>(quads[0], quads[1]);
            let high = _mm256_permute2f128_ps::<0x31>(quads[0], quads[1]);
            let sums = _mm256_mul_ps(_mm256_add_ps(low, high), scale_v);
            // SAFETY: `o` is 8 values (`chunks_exact_mut(KEYS)`).
            unsafe { _mm256_storeu_ps(o.as_mut_ptr(), sums) };
        }
        let first = whole * stride;
        super::scaled_dots_body::<true>(x, &rows[first.min(rows.len())..], stride, scale, rest)
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn add_weighted_rows(out: &mut [f32], weights: &[f32], rows: &[f32], stride: usize) {
        super::add_weighted_rows_body::<true>(out, weights, rows, stride)
    }
}

/// Panics unless `rows` holds `n` rows of `width` values, `stride` apart.
fn check_rows(rows: &[f32], n: usize, width: usize, stride: usize) {
    let needed = match n {
        0 => 0,
        n => (n - 1) * stride + width,
    };
    assert!(
        rows.len() >= needed,
        "{n} rows of {width} values {stride} apart need {needed} values, not {}",
        rows.len()
    );
}

/// `out[s] = (x · rows[s·stride .. s·stride + x.len()]) × scale` for each `s` of `out`:
/// the same bits as [`dot_f32`](crate::dot_f32) of each row, times `scale`.
///
/// Panics if `rows` is shorter than `out.len()` rows.
pub fn scaled_dots(x: &[f32], rows: &[f32], stride: usize, scale: f32, out: &mut [f32]) {
    check_rows(rows, out.len(), x.len(), stride);
    #[cfg(target_arch = "x86_64")]
    if crate::wide() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        #[allow(unsafe_code)]
        return unsafe { avx2::scaled_dots(x, rows, stride, scale, out) };
    }
    scaled_dots_body::<false>(x, rows, stride, scale, out)
}

/// `out += weights[s] × rows[s·stride .. s·stride + out.len()]` for each `s` of `weights`,
/// in that order: the same bits as [`add_scaled`](crate::add_scaled) called for each row.
///
/// Panics if `rows` is shorter than `weights.len()` rows.
pub fn add_weighted_rows(out: &mut [f32], weights: &[f32], rows: &[f32], stride: usize) {
    check_rows(rows, weights.len(), out.len(), stride);
    #[cfg(target_arch = "x86_64")]
    if crate::wide() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        #[allow(unsafe_code)]
        return unsafe { avx2::add_weighted_rows(out, weights, rows, stride) };
    }
    add_weighted_rows_body::<false>(out, weights, rows, stride)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| (((i * 37 + seed * 11) % 101) as f32 - 50.0) / 23.0)
            .collect()
    }

    type Dots = fn(&[f32], &[f32], usize, f32, &mut [f32]);
    type Sums = fn(&mut [f32], &[f32], &[f32], usize);
    type Sum = fn(&mut [f32], f32, &[f32]);

    const SHAPES: [(usize, usize, usize); 6] = [
        (64, 192, 37),
        (128, 256, 5),
        (48, 48, 17),
        (80, 160, 1),
        (7, 7, 11),
        (64, 64, 8),
    ];

    /// Each build's scores within f32 rounding of the exact dot products, and its weighted
    /// sums the bits of its own single calls, over every head width of the supported models
    /// and odd ones.
    fn check(build: &str, dots: Dots, sums: Sums, sum: Sum) {
        for (width, stride, n) in SHAPES {
            let x = values(width, 1);
            let rows = values((n - 1) * stride + width, 2);
            let mut got = vec![0.0; n];
            dots(&x, &rows, stride, 0.125, &mut got);
            for (s, got) in got.iter().enumerate() {
                let row = &rows[s * stride..s * stride + width];
                let exact: f64 = x.iter().zip(row).map(|(a, b)| f64::from(a * b)).sum();
                let magnitude: f64 = x
                    .iter()
                    .zip(row)
                    .map(|(a, b)| f64::from((a * b).abs()))
                    .sum();
                let err = (f64::from(*got) - exact * 0.125).abs();
                assert!(
                    err <= 1e-6 * magnitude,
                    "{build} dots, width {width}, row {s}: {got} against {}",
                    exact * 0.125
                );
            }

            let weights = values(n, 3);
            let mut got = values(width, 4);
            let mut want = got.clone();
            sums(&mut got, &weights, &rows, stride);
            for (s, w) in weights.iter().enumerate() {
                sum(&mut want, *w, &rows[s * stride..s * stride + width]);
            }
            assert_eq!(got, want, "{build} sums, width {width}");
        }
    }

    #[test]
    fn scores_are_dot_products_and_sums_the_bits_of_one_call_a_row() {
        check(
            "plain",
            scaled_dots_body::<false>,
            add_weighted_rows_body::<false>,
            crate::add_scaled_body::<false>,
        );
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY (each call): the CPU has AVX2 and FMA, checked just above.
            #[allow(unsafe_code)]
            check(
                "avx2",
                |x, r, st, sc, o| unsafe { avx2::scaled_dots(x, r, st, sc, o) },
                |o, w, r, st| unsafe { avx2::add_weighted_rows(o, w, r, st) },
                |o, w, x| unsafe { crate::avx2::add_scaled(o, w, x) },
            );
        }
        // The public functions, whichever build they pick, add nothing for no rows.
        let mut none = vec![1.0; 4];
        add_weighted_rows(&mut none, &[], &[], 8);
        assert_eq!(none, [1.0; 4]);
        let mut one = vec![0.0; 1];
        scaled_dots(&[2.0; 3], &[1.0, 2.0, 3.0], 3, 0.5, &mut one);
        assert_eq!(one, [6.0]);
    }

    /// A key's score is the same whatever number of keys after it is scored in the call
    /// (a query's later positions see more keys): for the keys of the whole groups of
    /// eight it had, and for the rest once they fall in the same place.
    #[test]
    fn a_key_keeps_its_score_as_more_keys_follow() {
        let (width, stride) = (64, 192);
        let x = values(width, 5);
        let rows = values(40 * stride, 6);
        let mut all = vec![0.0; 40];
        scaled_dots(&x, &rows, stride, 0.125, &mut all);
        for n in [8, 16, 17, 23, 24, 39] {
            let mut first = vec![0.0; n];
            scaled_dots(&x, &rows, stride, 0.125, &mut first);
            let whole = n / 8 * 8;
            assert_eq!(first[..whole], all[..whole], "{n} keys");
        }
    }

    #[test]
    #[should_panic(expected = "need")]
    fn rows_short_of_the_count_are_refused() {
        let mut out = vec![0.0; 3];
        scaled_dots(&[1.0; 4], &[0.0; 10], 4, 1.0, &mut out);
    }
}
