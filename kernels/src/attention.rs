//! The two inner loops of a decoder's attention over cached keys and values, for a block of
//! queries of one head at once: each query's scores against the keys it sees
//! ([`scaled_dots`]), and the softmax-weighted sum of those keys' values
//! ([`add_weighted_rows`]). The cache holds a token's keys (or values) for every head side
//! by side, so a head's rows are `stride` values apart ([`StridedRows`]).
//!
//! Keys are taken 64 at a time, and each such run is used by every query of the block while
//! it sits in the L1 cache: at a 1,000-token prompt a query-by-query loop read each head's
//! keys and values from the outer caches once per query, and that, not arithmetic, bounded
//! attention. In the AVX2 build, keys are scored eight at a time (each key's sums in a
//! vector of its own, added across in three rounds of pairwise adds), and a query's weighted
//! sum is held in registers over a run of keys.
//!
//! A query's results do not depend on the other queries of its block: its score of a key
//! depends only on where the key falls among the keys it sees (in a group of eight or after
//! the last whole group), and its sum adds the keys in order. A decoding step (a block of
//! one), a prompt read in chunks and a verifier's single pass therefore give a token the same
//! attention, to the bit.

use std::ops::Range;

use crate::{f32_body, madd};

/// Keys a block's queries go through together.
const KEY_RUN: usize = 64;

/// Output values summed in registers at once.
const GROUP: usize = 64;

/// `width`-value rows, row `s` starting at `data[s × stride]`.
#[derive(Clone, Copy, Debug)]
pub struct StridedRows<'a> {
    data: &'a [f32],
    stride: usize,
    width: usize,
}

impl<'a> StridedRows<'a> {
    /// Rows of `width` values `stride` apart in `data` (`stride ≥ width`); how many it
    /// holds is what `data` has room for.
    pub fn new(data: &'a [f32], stride: usize, width: usize) -> StridedRows<'a> {
        assert!(
            stride >= width,
            "rows of {width} values {stride} apart overlap"
        );
        StridedRows {
            data,
            stride,
            width,
        }
    }

    /// Rows held.
    fn len(&self) -> usize {
        match self.data.len().checked_sub(self.width) {
            None => 0,
            Some(past_first) => past_first
                .checked_div(self.stride)
                .map_or(usize::MAX, |more| more + 1),
        }
    }

    #[inline(always)]
    fn row(&self, s: usize) -> &'a [f32] {
        &self.data[s * self.stride..s * self.stride + self.width]
    }
}

/// Panics unless the shapes fit: `seen.len()` queries (`queries` rows), each seeing up to
/// `per_query` keys, every key they see in `keys`, and `out` holding `per_query` values a
/// query.
fn check(queries: usize, keys: StridedRows<'_>, seen: &[usize], out: usize, per_query: usize) {
    let longest = seen.iter().copied().max().unwrap_or(0);
    assert!(
        queries >= seen.len(),
        "{} queries for {} rows",
        seen.len(),
        queries
    );
    assert!(
        longest <= per_query,
        "a query sees {longest} keys, past its {per_query} outputs"
    );
    assert!(
        keys.len() >= longest,
        "a query sees {longest} keys of {}; the rows hold {}",
        keys.width,
        keys.len()
    );
    assert!(
        out >= seen.len() * per_query,
        "output shorter than its queries"
    );
}

/// For each run of [`KEY_RUN`] keys in turn, each query `j` of the block with the keys of
/// the run it sees: `(j, keys it sees in all, those of the run)`. Going through the runs in
/// the outer loop is what lets a run serve every query from the L1 cache.
#[inline(always)]
fn query_runs(seen: &[usize]) -> impl Iterator<Item = (usize, usize, Range<usize>)> + '_ {
    let longest = seen.iter().copied().max().unwrap_or(0);
    (0..longest).step_by(KEY_RUN).flat_map(move |first| {
        let end = (first + KEY_RUN).min(longest);
        seen.iter()
            .enumerate()
            .map(move |(j, &n)| (j, n, first.min(n)..end.min(n)))
    })
}

#[inline(always)]
fn scaled_dots_body<const FMA: bool>(
    queries: StridedRows<'_>,
    keys: StridedRows<'_>,
    scale: f32,
    seen: &[usize],
    out: &mut [f32],
    per_query: usize,
) {
    for (j, _, run) in query_runs(seen) {
        let x = queries.row(j);
        for s in run {
            out[j * per_query + s] = f32_body::<FMA>(x, keys.row(s)) * scale;
        }
    }
}

#[inline(always)]
fn add_weighted_rows_body<const FMA: bool>(
    out: &mut [f32],
    weights: &[f32],
    per_query: usize,
    seen: &[usize],
    values: StridedRows<'_>,
) {
    let d = values.width;
    for (j, n, keys) in query_runs(seen) {
        let w = &weights[j * per_query..j * per_query + n];
        let o = &mut out[j * d..(j + 1) * d];
        let mut col = 0;
        for group in o.chunks_mut(GROUP) {
            let width = group.len();
            if width == GROUP {
                // Held in registers over the run of keys.
                let mut acc = [0.0f32; GROUP];
                acc.copy_from_slice(group);
                for s in keys.clone() {
                    let row = &values.row(s)[col..col + GROUP];
                    for c in 0..GROUP {
                        acc[c] = madd::<FMA>(w[s], row[c], acc[c]);
                    }
                }
                group.copy_from_slice(&acc);
            } else {
                for s in keys.clone() {
                    let row = &values.row(s)[col..col + width];
                    for (a, v) in group.iter_mut().zip(row) {
                        *a = madd::<FMA>(w[s], *v, *a);
                    }
                }
            }
            col += width;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::StridedRows;
    use std::arch::x86_64::{
        __m256, _mm256_add_ps, _mm256_fmadd_ps, _mm256_hadd_ps, _mm256_loadu_ps, _mm256_mul_ps,
        _mm256_permute2f128_ps, _mm256_set1_ps, _mm256_setzero_ps, _mm256_storeu_ps,
    };

    /// Keys scored at once: one vector of sums each, added across in one vector.
    const KEYS: usize = 8;

    /// Keys below a multiple of eight go eight at a time when the width is a whole number of
    /// vectors; the rest of a query's keys, and every key of other widths, as
    /// [`super::scaled_dots_body`] scores them.
    #[target_feature(enable = "avx2,fma")]
    #[allow(unsafe_code)]
    pub(super) fn scaled_dots(
        queries: StridedRows<'_>,
        keys: StridedRows<'_>,
        scale: f32,
        seen: &[usize],
        out: &mut [f32],
        per_query: usize,
    ) {
        let d = keys.width;
        let scale_v = _mm256_set1_ps(scale);
        for (j, n, run) in super::query_runs(seen) {
            let x = queries.row(j);
            let o = &mut out[j * per_query..j * per_query + n];
            // Whole groups of eight from key 0: a run starts at a multiple of eight.
            let whole = if d.is_multiple_of(8) {
                n / KEYS * KEYS
            } else {
                0
            };
            let mut s = run.start;
            while s + KEYS <= run.end.min(whole) {
                // The caller checked that `keys` holds every key a query sees.
                let block = &keys.data[s * keys.stride..(s + KEYS - 1) * keys.stride + d];
                let mut acc: [__m256; KEYS] = [_mm256_setzero_ps(); KEYS];
                // Loads through pointers, bounded by the two slices' lengths above: with
                // a checked slice a load, the index arithmetic and checks outnumbered the
                // multiply-adds.
                let (xs, base) = (x.as_ptr(), block.as_ptr());
                for c in (0..d).step_by(8) {
                    // SAFETY: `c + 8 <= d = x.len()` (`d` is a multiple of 8 here).
                    let xv = unsafe { _mm256_loadu_ps(xs.add(c)) };
                    for (k, a) in acc.iter_mut().enumerate() {
                        // SAFETY: `k × stride + c + 8 <= (KEYS - 1) × stride + d`,
                        // which is `block.len()`.
                        let r = unsafe { _mm256_loadu_ps(base.add(k * keys.stride + c)) };
                        *a = _mm256_fmadd_ps(xv, r, *a);
                    }
                }
                // Per 128-bit half, `pairs[i]` holds partial sums of keys 2i and 2i + 1,
                // `quads` of keys 0..4 and 4..8; the halves' sums added give the eight.
                let pairs = [
                    _mm256_hadd_ps(acc[0], acc[1]),
                    _mm256_hadd_ps(acc[2], acc[3]),
                    _mm256_hadd_ps(acc[4], acc[5]),
                    _mm256_hadd_ps(acc[6], acc[7]),
                ];
                let quads = [
                    _mm256_hadd_ps(pairs[0], pairs[1]),
                    _mm256_hadd_ps(pairs[2], pairs[3]),
                ];
                let low = _mm256_permute2f128_ps::<0x20>(quads[0], quads[1]);
                let high = _mm256_permute2f128_ps::<0x31>(quads[0], quads[1]);
                let sums = _mm256_mul_ps(_mm256_add_ps(low, high), scale_v);
                let to = &mut o[s..s + KEYS];
                // SAFETY: `to` is 8 values.
                unsafe { _mm256_storeu_ps(to.as_mut_ptr(), sums) };
                s += KEYS;
            }
            for (s, o) in o.iter_mut().enumerate().take(run.end).skip(s) {
                *o = super::f32_body::<true>(x, keys.row(s)) * scale;
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn add_weighted_rows(
        out: &mut [f32],
        weights: &[f32],
        per_query: usize,
        seen: &[usize],
        values: StridedRows<'_>,
    ) {
        super::add_weighted_rows_body::<true>(out, weights, per_query, seen, values)
    }
}

/// Scores of a block of queries: for query `j` (row `j` of `queries`), which sees the first
/// `seen[j]` keys, `out[j × P + s] = (query · key s) × scale` for `s < seen[j]`, where `P =
/// out.len() / seen.len()` (values past a query's keys are left as they are). Each score is
/// what the same query alone gets.
///
/// Panics if the rows are not as wide as each other, or hold fewer queries or keys than
/// `seen` asks for, or `out` is too short.
pub fn scaled_dots(
    queries: StridedRows<'_>,
    keys: StridedRows<'_>,
    scale: f32,
    seen: &[usize],
    out: &mut [f32],
) {
    if seen.is_empty() {
        return;
    }
    assert_eq!(
        queries.width, keys.width,
        "queries and keys differ in width"
    );
    let per_query = out.len() / seen.len();
    check(queries.len(), keys, seen, out.len(), per_query);
    #[cfg(target_arch = "x86_64")]
    if crate::wide() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        #[allow(unsafe_code)]
        return unsafe { avx2::scaled_dots(queries, keys, scale, seen, out, per_query) };
    }
    scaled_dots_body::<false>(queries, keys, scale, seen, out, per_query)
}

/// Weighted sums of a block of queries: for query `j`, `out[j × W ..][..W] += Σ_s
/// weights[j × P + s] × value s` over its `seen[j]` keys in order, where `W` is the values'
/// width and `P = weights.len() / seen.len()`: the bits of [`add_scaled`](crate::add_scaled)
/// called for each key in turn.
///
/// Panics if `values` holds fewer rows than `seen` asks for, or `out` or `weights` is too
/// short.
pub fn add_weighted_rows(
    out: &mut [f32],
    weights: &[f32],
    seen: &[usize],
    values: StridedRows<'_>,
) {
    if seen.is_empty() {
        return;
    }
    let per_query = weights.len() / seen.len();
    check(seen.len(), values, seen, weights.len(), per_query);
    assert!(
        out.len() >= seen.len() * values.width,
        "output shorter than its queries"
    );
    #[cfg(target_arch = "x86_64")]
    if crate::wide() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        #[allow(unsafe_code)]
        return unsafe { avx2::add_weighted_rows(out, weights, per_query, seen, values) };
    }
    add_weighted_rows_body::<false>(out, weights, per_query, seen, values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| (((i * 37 + seed * 11) % 101) as f32 - 50.0) / 23.0)
            .collect()
    }

    type Dots = fn(StridedRows<'_>, StridedRows<'_>, f32, &[usize], &mut [f32], usize);
    type Sums = fn(&mut [f32], &[f32], usize, &[usize], StridedRows<'_>);
    type Sum = fn(&mut [f32], f32, &[f32]);

    /// (width, stride, keys): every head width of the supported models and odd ones, more
    /// keys than one run of them, fewer than a group of eight.
    const SHAPES: [(usize, usize, usize); 6] = [
        (64, 192, 150),
        (128, 256, 5),
        (48, 48, 17),
        (80, 160, 1),
        (7, 7, 70),
        (64, 64, 8),
    ];

    /// Each build's scores within f32 rounding of the exact dot products, its weighted sums
    /// the bits of its own single calls, and a block's results those of its queries alone.
    fn check_build(build: &str, dots: Dots, sums: Sums, sum: Sum) {
        for (width, stride, n) in SHAPES {
            let rows = values((n - 1) * stride + width, 2);
            let keys = StridedRows::new(&rows, stride, width);
            // Three queries seeing the first n − 2, n and n − 1 keys (at least one).
            let seen: Vec<usize> = [n.saturating_sub(2), n, n - 1].map(|s| s.max(1)).into();
            let query_data = values(3 * width, 1);
            let queries = StridedRows::new(&query_data, width, width);
            let mut scores = vec![0.0; 3 * n];
            dots(queries, keys, 0.125, &seen, &mut scores, n);
            for (j, &seen_j) in seen.iter().enumerate() {
                let x = queries.row(j);
                let mut alone = vec![0.0; seen_j];
                dots(
                    StridedRows::new(x, width, width),
                    keys,
                    0.125,
                    &[seen_j],
                    &mut alone,
                    seen_j,
                );
                assert_eq!(
                    scores[j * n..j * n + seen_j],
                    alone,
                    "{build} block, width {width}"
                );
                for (s, got) in alone.iter().enumerate() {
                    let row = keys.row(s);
                    let exact: f64 = x.iter().zip(row).map(|(a, b)| f64::from(a * b)).sum();
                    let size: f64 = x
                        .iter()
                        .zip(row)
                        .map(|(a, b)| f64::from((a * b).abs()))
                        .sum();
                    let err = (f64::from(*got) - exact * 0.125).abs();
                    assert!(err <= 1e-6 * size, "{build} width {width} key {s}: {got}");
                }
            }

            let weights = values(3 * n, 3);
            let mut got = values(3 * width, 4);
            let mut want = got.clone();
            sums(&mut got, &weights, n, &seen, keys);
            for (j, &seen_j) in seen.iter().enumerate() {
                for s in 0..seen_j {
                    let o = &mut want[j * width..(j + 1) * width];
                    sum(o, weights[j * n + s], keys.row(s));
                }
            }
            assert_eq!(got, want, "{build} sums, width {width}");
        }
    }

    #[test]
    fn blocks_give_each_query_its_own_scores_and_the_bits_of_one_call_a_key() {
        check_build(
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
            check_build(
                "avx2",
                |q, k, sc, seen, o, p| unsafe { avx2::scaled_dots(q, k, sc, seen, o, p) },
                |o, w, p, seen, v| unsafe { avx2::add_weighted_rows(o, w, p, seen, v) },
                |o, w, x| unsafe { crate::avx2::add_scaled(o, w, x) },
            );
        }
        // The public functions, whichever build they pick.
        let key_data = [1.0, 2.0, 3.0, 9.0];
        let keys = StridedRows::new(&key_data, 4, 3);
        let mut one = vec![0.0; 1];
        scaled_dots(StridedRows::new(&[2.0; 3], 3, 3), keys, 0.5, &[1], &mut one);
        assert_eq!(one, [6.0]);
        let mut sum = vec![1.0; 3];
        add_weighted_rows(&mut sum, &[2.0], &[1], keys);
        assert_eq!(sum, [3.0, 5.0, 7.0]);
        add_weighted_rows(&mut sum, &[], &[], keys);
        assert_eq!(sum, [3.0, 5.0, 7.0]);
    }

    /// A key's score is the same whatever number of keys after it the query sees: for the
    /// keys of the whole groups of eight it had.
    #[test]
    fn a_key_keeps_its_score_as_more_keys_follow() {
        let (width, stride) = (64, 192);
        let x = values(width, 5);
        let query = StridedRows::new(&x, width, width);
        let rows = values(140 * stride, 6);
        let keys = StridedRows::new(&rows, stride, width);
        let mut all = vec![0.0; 140];
        scaled_dots(query, keys, 0.125, &[140], &mut all);
        for n in [8, 16, 17, 23, 24, 64, 65, 139] {
            let mut first = vec![0.0; n];
            scaled_dots(query, keys, 0.125, &[n], &mut first);
            let whole = n / 8 * 8;
            assert_eq!(first[..whole], all[..whole], "{n} keys");
        }
    }

    #[test]
    #[should_panic(expected = "the rows hold")]
    fn keys_short_of_what_a_query_sees_are_refused() {
        let mut out = vec![0.0; 3];
        let query = StridedRows::new(&[1.0; 4], 4, 4);
        scaled_dots(
            query,
            StridedRows::new(&[0.0; 10], 4, 4),
            1.0,
            &[3],
            &mut out,
        );
    }
}
