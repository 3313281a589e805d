//! Products of 4- and 8-bit weight rows with activations quantised to 8 bits, in integer
//! dot products: AVX-512 VNNI's `vpdpbusd` multiplies 32 unsigned weight bytes by 32 signed
//! activation bytes and adds them four at a time into eight 32-bit sums, one instruction for
//! what takes four fused multiply-adds in f32, after the weights were widened.
//!
//! Each token's 32-value block `x` becomes `round(x / s)` with `s = max |x| / 127`; each
//! weight row's block is `q × d + m` (4-bit `q`, Q4_0's `m` being `−8d`) or `q × d` (signed
//! 8-bit `q`, added to 128 so that it is unsigned). A row's value for a token is
//! `Σ_b fma(Σ q·x_q as f32, d·s, ·)` then `+ m · (s · Σ x_q)`, block after block: the integer
//! sums are exact, so every build (the plain loops and the vector one) gives the same bits.
//!
//! Eight rows are packed side by side, lane `i` of a vector holding four consecutive values
//! of row `i`, so that one broadcast of four activation bytes serves eight rows, and eight
//! tokens are multiplied with a packed block while it sits in registers.

use super::BLOCK;

/// Rows packed side by side: one 32-bit lane of a vector a row.
const GROUP: usize = 8;

/// Tokens multiplied with a packed block while its eight vectors sit in registers.
const TILE: usize = 8;

/// Bytes of one group's block once packed: eight vectors of 32 bytes.
const PACKED_BLOCK: usize = GROUP * BLOCK;

/// Activations quantised to signed 8-bit values, a scale per token and 32-value block,
/// stored block-major (block `b` of every token, then block `b + 1`): the tokens a product
/// multiplies together then lie side by side in each block, read through one pointer.
#[derive(Debug, Clone, Default)]
pub struct QuantisedTokens {
    cols: usize,
    blocks: usize,
    tokens: usize,
    /// Block `b` of token `t` at `(b × tokens + t) × 32`.
    qs: Vec<i8>,
    /// `s` per block and token (at `b × tokens + t`).
    scales: Vec<f32>,
    /// `s × Σ x_q` per block and token: the block's sum as quantised, for 4-bit minimums.
    sums: Vec<f32>,
    /// `128 × Σ x_q` per block and token: what 8-bit weights' offset of 128 adds.
    offsets: Vec<i32>,
}

impl QuantisedTokens {
    /// The tokens of `xs` (`cols` values each; `cols` a multiple of 32), quantised; a
    /// partial last token is left out.
    pub fn new(xs: &[f32], cols: usize) -> QuantisedTokens {
        let blocks = cols / BLOCK;
        let tokens = xs.len().checked_div(cols).unwrap_or(0);
        let mut out = QuantisedTokens {
            cols: blocks * BLOCK,
            blocks,
            tokens,
            qs: vec![0; tokens * blocks * BLOCK],
            scales: vec![0.0; tokens * blocks],
            sums: vec![0.0; tokens * blocks],
            offsets: vec![0; tokens * blocks],
        };
        // One token at a time into token-major scratch, then each block to its place.
        let (mut qs, mut scales, mut sums, mut offsets) = (
            vec![0i8; blocks * BLOCK],
            vec![0.0f32; blocks],
            vec![0.0f32; blocks],
            vec![0i32; blocks],
        );
        for (t, x) in xs.chunks_exact(cols.max(1)).take(tokens).enumerate() {
            let x = &x[..blocks * BLOCK];
            quantise(x, &mut qs, &mut scales, &mut sums, &mut offsets);
            for (b, q) in qs.chunks_exact(BLOCK).enumerate() {
                let at = b * tokens + t;
                out.qs[at * BLOCK..(at + 1) * BLOCK].copy_from_slice(q);
                (out.scales[at], out.sums[at], out.offsets[at]) = (scales[b], sums[b], offsets[b]);
            }
        }
        out
    }

    /// The tokens of `parts`, one part after another, as one set (parts whose values a
    /// token differ from the first's are left out): what quantising all of them at once
    /// gives, so that parts can be quantised on several threads.
    pub fn join(parts: &[QuantisedTokens]) -> QuantisedTokens {
        let Some(first) = parts.first() else {
            return QuantisedTokens::default();
        };
        let (cols, blocks) = (first.cols, first.blocks);
        let parts: Vec<&QuantisedTokens> = parts
            .iter()
            .filter(|p| p.cols == cols && p.blocks == blocks)
            .collect();
        let tokens = parts.iter().map(|p| p.tokens).sum();
        let mut out = QuantisedTokens {
            cols,
            blocks,
            tokens,
            qs: Vec::with_capacity(tokens * blocks * BLOCK),
            scales: Vec::with_capacity(tokens * blocks),
            sums: Vec::with_capacity(tokens * blocks),
            offsets: Vec::with_capacity(tokens * blocks),
        };
        for b in 0..blocks {
            for p in &parts {
                let at = b * p.tokens..(b + 1) * p.tokens;
                out.qs
                    .extend_from_slice(&p.qs[at.start * BLOCK..at.end * BLOCK]);
                out.scales.extend_from_slice(&p.scales[at.clone()]);
                out.sums.extend_from_slice(&p.sums[at.clone()]);
                out.offsets.extend_from_slice(&p.offsets[at]);
            }
        }
        out
    }

    /// Tokens held.
    pub fn tokens(&self) -> usize {
        self.tokens
    }

    /// Values a token.
    pub fn cols(&self) -> usize {
        self.cols
    }
}

fn quantise(x: &[f32], qs: &mut [i8], scales: &mut [f32], sums: &mut [f32], offsets: &mut [i32]) {
    #[cfg(target_arch = "x86_64")]
    if super::wide() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above), all that calling a function
        // compiled with `target_feature(enable = "avx2,fma")` requires.
        #[allow(unsafe_code)]
        return unsafe { avx2::quantise(x, qs, scales, sums, offsets) };
    }
    quantise_body(x, qs, scales, sums, offsets)
}

/// No fused operations and rounding to nearest, ties to even: both builds give the same bits.
#[inline(always)]
fn quantise_body(
    x: &[f32],
    qs: &mut [i8],
    scales: &mut [f32],
    sums: &mut [f32],
    offsets: &mut [i32],
) {
    for ((((x, q), s), sum), offset) in x
        .chunks_exact(BLOCK)
        .zip(qs.chunks_exact_mut(BLOCK))
        .zip(scales.iter_mut())
        .zip(sums.iter_mut())
        .zip(offsets.iter_mut())
    {
        let amax = x.iter().fold(0.0f32, |a, v| a.max(v.abs()));
        let scale = amax / 127.0;
        let inv = if scale > 0.0 { 1.0 / scale } else { 0.0 };
        let mut total = 0i32;
        for (q, v) in q.iter_mut().zip(x) {
            // Within ±127 (|v| ≤ amax) up to rounding; the clamp also maps NaN to 0.
            let r = (v * inv).round_ties_even().clamp(-127.0, 127.0);
            *q = r as i8;
            total += i32::from(*q);
        }
        *s = scale;
        *sum = scale * total as f32;
        *offset = 128 * total;
    }
}

/// Weight rows packed for [`product`]: groups of eight rows side by side, block by block.
#[derive(Debug, Clone, Default)]
pub struct PackedRows {
    rows: usize,
    blocks: usize,
    /// Signed 8-bit weights, stored plus 128; else 4-bit weights with a minimum.
    eight_bit: bool,
    /// Per group and block: eight vectors, vector `j`'s lane `i` holding values
    /// `4j..4j + 4` of the block in row `i` of the group.
    bytes: Vec<u8>,
    /// Per group and block: the eight rows' scales.
    scales: Vec<f32>,
    /// Per group and block: the eight rows' minimums (4-bit rows).
    mins: Vec<f32>,
}

impl PackedRows {
    /// Rows held.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Packs `rows` rows of `blocks` blocks: `scales` (and `mins`, for 4-bit rows) hold a
    /// value a block, row-major (row `r`'s block `b` at `r × blocks + b`), and
    /// `pack_group(first, n, out)` packs every block of rows `first..first + n` into `out`.
    fn pack(
        &mut self,
        (rows, blocks): (usize, usize),
        scales: &[f32],
        mins: Option<&[f32]>,
        pack_group: impl Fn(usize, usize, &mut [u8]),
    ) {
        let groups = rows.div_ceil(GROUP);
        self.rows = rows;
        self.blocks = blocks;
        self.eight_bit = mins.is_none();
        // Every value a product reads is written below, but for the lanes of a last group's
        // missing rows, whose sums are never stored, and the minimums of 8-bit rows, which
        // are not read: what an earlier packing left there stays, rather than zeroing the
        // whole buffer each time it is reused.
        // Nor is a buffer shortened: packings of matrices of other widths take turns with
        // the same buffers, and growing one again would write zeros over all it regains.
        grow(&mut self.bytes, groups * blocks * PACKED_BLOCK);
        grow(&mut self.scales, groups * blocks * GROUP);
        grow(&mut self.mins, groups * blocks * GROUP);
        let per_group = blocks * GROUP;
        if per_group == 0 {
            return;
        }
        for (g, ((bytes, ds), ms)) in self
            .bytes
            .chunks_exact_mut(blocks * PACKED_BLOCK)
            .zip(self.scales.chunks_exact_mut(per_group))
            .zip(self.mins.chunks_exact_mut(per_group))
            .take(groups)
            .enumerate()
        {
            let first = g * GROUP;
            let n = GROUP.min(rows - first);
            transpose_group(ds, scales, first, n, blocks);
            if let Some(mins) = mins {
                transpose_group(ms, mins, first, n, blocks);
            }
            pack_group(first, n, bytes);
        }
    }

    /// Packs `rows` rows of 4-bit blocks (`cols` values a row, laid out as for
    /// [`super::dot_q4`]); rows past what the inputs hold are left out.
    pub fn pack_q4(&mut self, scales: &[f32], mins: &[f32], qs: &[u8], cols: usize) {
        let blocks = cols / BLOCK;
        let rows = (scales.len().min(mins.len()))
            .checked_div(blocks)
            .map_or(0, |r| r.min(qs.len() / (blocks * 16)));
        #[cfg(target_arch = "x86_64")]
        let wide = super::wide();
        let pack_group = |first: usize, n: usize, out: &mut [u8]| {
            let row = |i: usize| &qs[(first + i) * blocks * 16..][..blocks * 16];
            #[cfg(target_arch = "x86_64")]
            if n == GROUP && wide {
                let rows: [&[u8]; GROUP] = std::array::from_fn(row);
                // SAFETY: the CPU has AVX2 and FMA (checked above).
                #[allow(unsafe_code)]
                unsafe {
                    avx2::pack_q4(&rows, blocks, out)
                };
                return;
            }
            for i in 0..n {
                for (b, q) in row(i).chunks_exact(16).enumerate() {
                    let out = &mut out[b * PACKED_BLOCK..][..PACKED_BLOCK];
                    for k in 0..BLOCK {
                        let v = if k < 16 { q[k] & 15 } else { q[k - 16] >> 4 };
                        out[k / 4 * 32 + i * 4 + k % 4] = v;
                    }
                }
            }
        };
        self.pack((rows, blocks), scales, Some(mins), pack_group);
    }

    /// Packs rows of signed 8-bit blocks (`cols` values a row, as for [`super::dot_q8`]);
    /// rows past what the inputs hold are left out.
    pub fn pack_q8(&mut self, scales: &[f32], qs: &[i8], cols: usize) {
        let blocks = cols / BLOCK;
        let rows = scales
            .len()
            .checked_div(blocks)
            .map_or(0, |r| r.min(qs.len() / (blocks * BLOCK)));
        #[cfg(target_arch = "x86_64")]
        let wide = super::wide();
        let pack_group = |first: usize, n: usize, out: &mut [u8]| {
            let row = |i: usize| &qs[(first + i) * blocks * BLOCK..][..blocks * BLOCK];
            #[cfg(target_arch = "x86_64")]
            if n == GROUP && wide {
                let rows: [&[i8]; GROUP] = std::array::from_fn(row);
                // SAFETY: the CPU has AVX2 and FMA (checked above).
                #[allow(unsafe_code)]
                unsafe {
                    avx2::pack_q8(&rows, blocks, out)
                };
                return;
            }
            for i in 0..n {
                for (b, q) in row(i).chunks_exact(BLOCK).enumerate() {
                    let out = &mut out[b * PACKED_BLOCK..][..PACKED_BLOCK];
                    for (k, q) in q.iter().enumerate() {
                        out[k / 4 * 32 + i * 4 + k % 4] = (*q as u8) ^ 0x80;
                    }
                }
            }
        };
        self.pack((rows, blocks), &scales[..rows * blocks], None, pack_group);
    }
}

/// `v` made at least `len` long, new values zero.
fn grow<T: Copy + Default>(v: &mut Vec<T>, len: usize) {
    if v.len() < len {
        v.resize(len, T::default());
    }
}

/// Block `b` of rows `first..first + n` of `values` (a value a block, row-major) to
/// `out[b × 8 + i]`, for row `first + i`.
fn transpose_group(out: &mut [f32], values: &[f32], first: usize, n: usize, blocks: usize) {
    let rows: [&[f32]; GROUP] = std::array::from_fn(|i| {
        values
            .get((first + i) * blocks..(first + i + 1) * blocks)
            .unwrap_or(&[])
    });
    for (b, out) in out.chunks_exact_mut(GROUP).take(blocks).enumerate() {
        for (o, row) in out.iter_mut().zip(&rows[..n]) {
            *o = row[b];
        }
    }
}

/// Whether [`product`] runs in integer vector instructions on this CPU (AVX-512 VNNI);
/// elsewhere it runs plain loops, to the same bits but far slower than f32 products.
pub fn int8_products_fast() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        super::wide() && vnni()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(target_arch = "x86_64")]
fn vnni() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vl")
        && std::arch::is_x86_feature_detected!("avx512vnni")
}

/// `out[t × stride + r]` = row `r` of `w` · token `t` of `x`, for every row and token.
/// Nothing is written when the two disagree on the blocks a row holds, or when `out` is too
/// short for the last token's rows.
pub fn product(w: &PackedRows, x: &QuantisedTokens, out: &mut [f32], stride: usize) {
    product_tokens(w, x, 0..x.tokens(), out, stride)
}

/// [`product`] for tokens `tokens` of `x` only: `out[(t − tokens.start) × stride + r]`.
/// Nothing is written when the range is empty or reaches past `x`'s tokens.
pub fn product_tokens(
    w: &PackedRows,
    x: &QuantisedTokens,
    tokens: std::ops::Range<usize>,
    out: &mut [f32],
    stride: usize,
) {
    if w.blocks != x.blocks
        || w.rows == 0
        || tokens.is_empty()
        || tokens.end > x.tokens()
        || stride < w.rows
        || out.len() < (tokens.len() - 1) * stride + w.rows
    {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if int8_products_fast() {
        // SAFETY: the CPU has AVX2, FMA and AVX-512 F, BW, VL and VNNI (checked just above),
        // all that calling a function compiled with those target features requires.
        #[allow(unsafe_code)]
        return unsafe { vnni::product(w, x, tokens, out, stride) };
    }
    product_plain(w, x, tokens, out, stride)
}

/// [`product`] in plain loops: the reference the vector build matches bit for bit.
fn product_plain(
    w: &PackedRows,
    x: &QuantisedTokens,
    tokens: std::ops::Range<usize>,
    out: &mut [f32],
    stride: usize,
) {
    let blocks = w.blocks;
    for r in 0..w.rows {
        let (g, i) = (r / GROUP, r % GROUP);
        for t in tokens.clone() {
            let mut acc = 0.0f32;
            for b in 0..blocks {
                let packed = &w.bytes[(g * blocks + b) * PACKED_BLOCK..][..PACKED_BLOCK];
                let tb = b * x.tokens + t;
                let xq = &x.qs[tb * BLOCK..][..BLOCK];
                let mut dot = 0i32;
                for k in 0..BLOCK {
                    dot += i32::from(packed[k / 4 * 32 + i * 4 + k % 4]) * i32::from(xq[k]);
                }
                let wb = (g * blocks + b) * GROUP + i;
                if w.eight_bit {
                    dot -= x.offsets[tb];
                }
                acc = (dot as f32).mul_add(w.scales[wb] * x.scales[tb], acc);
                if !w.eight_bit {
                    acc = w.mins[wb].mul_add(x.sums[tb], acc);
                }
            }
            out[(t - tokens.start) * stride + r] = acc;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::{
        __m128i, __m256, __m256i, _mm256_add_epi32, _mm256_and_ps, _mm256_and_si256,
        _mm256_andnot_si256, _mm256_castps256_ps128, _mm256_castps_si256, _mm256_castsi128_si256,
        _mm256_castsi256_ps, _mm256_castsi256_si128, _mm256_cmp_ps, _mm256_cvtps_epi32,
        _mm256_extractf128_ps, _mm256_extracti128_si256, _mm256_inserti128_si256, _mm256_loadu_ps,
        _mm256_loadu_si256, _mm256_max_epi32, _mm256_max_ps, _mm256_min_epi32, _mm256_mul_ps,
        _mm256_packs_epi16, _mm256_packs_epi32, _mm256_permute2x128_si256,
        _mm256_permutevar8x32_epi32, _mm256_set1_epi32, _mm256_set1_epi8, _mm256_set1_ps,
        _mm256_setr_epi32, _mm256_setzero_ps, _mm256_srli_epi16, _mm256_storeu_si256,
        _mm256_unpackhi_epi32, _mm256_unpackhi_epi64, _mm256_unpacklo_epi32, _mm256_unpacklo_epi64,
        _mm256_xor_si256, _mm_add_epi32, _mm_cvtsi128_si32, _mm_cvtss_f32, _mm_loadu_si128,
        _mm_max_ps, _mm_max_ss, _mm_movehl_ps, _mm_shuffle_epi32, _mm_shuffle_ps, _CMP_UNORD_Q,
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

    /// Eight 4-bit rows (16 bytes a block) packed into `out`, block after block.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn pack_q4(rows: &[&[u8]; GROUP], blocks: usize, out: &mut [u8]) {
        let low = _mm256_set1_epi8(15);
        let rows = rows.map(|r| &r[..blocks * 16]);
        for (b, out) in out.chunks_exact_mut(PACKED_BLOCK).take(blocks).enumerate() {
            // SAFETY: each row is sliced to `blocks` blocks of 16 bytes and `b < blocks`, so
            // the unaligned 128-bit load reads block `b` within it.
            let load = |i: usize| unsafe {
                _mm_loadu_si128(rows[i].as_ptr().add(b * 16).cast::<__m128i>())
            };
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
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod vnni {
    use std::arch::x86_64::{
        __m256, __m256i, _mm256_add_epi32, _mm256_cvtepi32_ps, _mm256_dpbusd_epi32,
        _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_loadu_si256, _mm256_mul_ps, _mm256_set1_epi32,
        _mm256_set1_ps, _mm256_setzero_ps, _mm256_setzero_si256, _mm256_storeu_ps,
        _mm256_sub_epi32,
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| (((i * 37 + seed * 11) % 101) as f32 - 50.0) / 17.0)
            .collect()
    }

    /// 4-bit rows: scales, minimums and packed nibbles, value `k` of each block at nibble
    /// `(k × 7 + row + block) mod 16`.
    fn q4_rows(rows: usize, cols: usize) -> (Vec<f32>, Vec<f32>, Vec<u8>) {
        let blocks = cols / BLOCK;
        let nibble = |r: usize, b: usize, k: usize| ((k * 7 + r + b) % 16) as u8;
        let mut qs = Vec::new();
        for r in 0..rows {
            for b in 0..blocks {
                qs.extend((0..16).map(|k| nibble(r, b, k) | (nibble(r, b, k + 16) << 4)));
            }
        }
        let scales = values(rows * blocks, 1).iter().map(|v| v / 40.0).collect();
        let mins = values(rows * blocks, 2).iter().map(|v| v / 9.0).collect();
        (scales, mins, qs)
    }

    fn q4_value(s: &[f32], m: &[f32], qs: &[u8], cols: usize, r: usize, k: usize) -> f32 {
        let blocks = cols / BLOCK;
        let (b, j) = (r * blocks + k / BLOCK, k % BLOCK);
        let byte = qs[b * 16 + j % 16];
        let q = if j < 16 { byte & 15 } else { byte >> 4 };
        f32::from(q) * s[b] + m[b]
    }

    /// The scale of value `i` of the tokens, counted token by token.
    fn scale_of(x: &QuantisedTokens, i: usize) -> f32 {
        let (t, b) = (i / x.cols, i % x.cols / BLOCK);
        x.scales[b * x.tokens + t]
    }

    /// The tokens' values as quantised, token by token.
    fn dequantised_tokens(x: &QuantisedTokens) -> Vec<f32> {
        (0..x.tokens * x.cols)
            .map(|i| {
                let (t, k) = (i / x.cols, i % x.cols);
                let at = (k / BLOCK * x.tokens + t) * BLOCK + k % BLOCK;
                f32::from(x.qs[at]) * scale_of(x, i)
            })
            .collect()
    }

    #[test]
    fn quantised_tokens_stay_within_half_a_step() {
        let xs = values(3 * 96, 5);
        let x = QuantisedTokens::new(&xs, 96);
        assert_eq!((x.tokens(), x.cols()), (3, 96));
        for (i, (a, b)) in xs.iter().zip(dequantised_tokens(&x)).enumerate() {
            assert!((a - b).abs() <= scale_of(&x, i) * 0.5001, "{i}: {a} vs {b}");
        }
        // A block of zeros has scale 0 and quantises to zeros.
        let zero = QuantisedTokens::new(&[0.0; 32], 32);
        assert_eq!((zero.scales[0], zero.qs[5], zero.sums[0]), (0.0, 0, 0.0));
        // Scale 1: halves round to even; NaN is left out of the maximum and becomes 0; both
        // builds agree on every field.
        let mut odd = [0.0f32; 32];
        odd[..6].copy_from_slice(&[127.0, 2.5, 3.5, -2.5, f32::NAN, -126.6]);
        for baseline in [true, false] {
            crate::force_baseline(baseline);
            let x = QuantisedTokens::new(&odd, 32);
            crate::force_baseline(false);
            assert_eq!(x.scales, [1.0]);
            assert_eq!(x.qs[..6], [127, 2, 4, -2, 0, -127], "baseline {baseline}");
            assert_eq!((x.sums[0], x.offsets[0]), (4.0, 512));
        }
    }

    #[test]
    fn products_are_those_of_the_dequantised_values() {
        let (rows, cols, tokens) = (21, 96, 11);
        let (s, m, qs) = q4_rows(rows, cols);
        let xs = values(tokens * cols, 3);
        let x = QuantisedTokens::new(&xs, cols);
        let xd = dequantised_tokens(&x);
        let mut w = PackedRows::default();
        w.pack_q4(&s, &m, &qs, cols);
        assert_eq!(w.rows(), rows);
        let stride = rows + 3;
        let mut out = vec![f32::NAN; tokens * stride];
        product(&w, &x, &mut out, stride);
        for t in 0..tokens {
            for r in 0..rows {
                let want: f64 = (0..cols)
                    .map(|k| f64::from(q4_value(&s, &m, &qs, cols, r, k) * xd[t * cols + k]))
                    .sum();
                let got = out[t * stride + r];
                assert!(
                    (f64::from(got) - want).abs() < 1e-3 * want.abs().max(1.0),
                    "{t} {r}"
                );
            }
            // The gap between a token's rows is left alone.
            assert!(out[t * stride + rows].is_nan());
        }

        let q8: Vec<i8> = (0..rows * cols)
            .map(|i| (i * 53 % 255) as u8 as i8)
            .collect();
        let s8: Vec<f32> = values(rows * cols / BLOCK, 4)
            .iter()
            .map(|v| v / 50.0)
            .collect();
        w.pack_q8(&s8, &q8, cols);
        product(&w, &x, &mut out, stride);
        for t in 0..tokens {
            for r in 0..rows {
                let want: f64 = (0..cols)
                    .map(|k| {
                        let wv = f32::from(q8[r * cols + k]) * s8[(r * cols + k) / BLOCK];
                        f64::from(wv * xd[t * cols + k])
                    })
                    .sum();
                let got = out[t * stride + r];
                assert!(
                    (f64::from(got) - want).abs() < 1e-3 * want.abs().max(1.0),
                    "{t} {r}"
                );
            }
        }
    }

    #[test]
    fn every_build_gives_the_same_bits() {
        let (rows, cols, tokens) = (40, 576, 19);
        let (s, m, qs) = q4_rows(rows, cols);
        let x = QuantisedTokens::new(&values(tokens * cols, 9), cols);
        let q8: Vec<i8> = (0..rows * cols)
            .map(|i| (i * 29 % 256) as u8 as i8)
            .collect();
        let s8: Vec<f32> = values(rows * cols / BLOCK, 6);
        for eight_bit in [false, true] {
            let mut w = PackedRows::default();
            if eight_bit {
                w.pack_q8(&s8, &q8, cols);
            } else {
                w.pack_q4(&s, &m, &qs, cols);
            }
            let (mut fast, mut plain) = (vec![0.0; tokens * rows], vec![0.0; tokens * rows]);
            product(&w, &x, &mut fast, rows);
            product_plain(&w, &x, 0..tokens, &mut plain, rows);
            assert_eq!(fast, plain, "8-bit rows: {eight_bit}");
            // The plain packing (as for a partial group) gives the same bytes.
            let mut baseline = PackedRows::default();
            crate::force_baseline(true);
            if eight_bit {
                baseline.pack_q8(&s8, &q8, cols);
            } else {
                baseline.pack_q4(&s, &m, &qs, cols);
            }
            let xb = QuantisedTokens::new(&values(tokens * cols, 9), cols);
            crate::force_baseline(false);
            assert_eq!(baseline.bytes, w.bytes);
            assert_eq!((&baseline.scales, &baseline.mins), (&w.scales, &w.mins));
            assert_eq!((xb.qs, xb.scales), (x.qs.clone(), x.scales.clone()));
        }
    }

    #[test]
    fn a_range_of_tokens_gets_what_the_whole_product_gives_it() {
        let (rows, cols, tokens) = (24, 64, 13);
        let (s, m, qs) = q4_rows(rows, cols);
        let x = QuantisedTokens::new(&values(tokens * cols, 2), cols);
        let mut w = PackedRows::default();
        w.pack_q4(&s, &m, &qs, cols);
        let mut all = vec![0.0; tokens * rows];
        product(&w, &x, &mut all, rows);
        let mut part = vec![0.0; 5 * rows];
        product_tokens(&w, &x, 7..12, &mut part, rows);
        assert_eq!(part, all[7 * rows..12 * rows]);
        let mut plain = vec![0.0; 5 * rows];
        product_plain(&w, &x, 7..12, &mut plain, rows);
        assert_eq!(plain, part);
        // A range past the tokens writes nothing.
        let mut past = vec![7.0; 5 * rows];
        product_tokens(&w, &x, 10..15, &mut past, rows);
        assert!(past.iter().all(|v| *v == 7.0));
    }

    #[test]
    fn rows_packed_over_an_earlier_packing_multiply_as_freshly_packed_ones() {
        // The buffer first holds 40 rows of 96 values (8-bit), then 13 rows of 64 (4-bit): a
        // last group of five rows over what the first packing left.
        let x = QuantisedTokens::new(&values(9 * 64, 4), 64);
        let qs8: Vec<i8> = (0..40 * 96).map(|i| ((i * 53) % 255) as i8).collect();
        let mut reused = PackedRows::default();
        reused.pack_q8(&values(40 * 3, 6), &qs8, 96);
        let (s, m, qs) = q4_rows(13, 64);
        reused.pack_q4(&s, &m, &qs, 64);
        let mut fresh = PackedRows::default();
        fresh.pack_q4(&s, &m, &qs, 64);
        let (mut a, mut b) = (vec![0.0; 9 * 13], vec![1.0; 9 * 13]);
        product(&reused, &x, &mut a, 13);
        product(&fresh, &x, &mut b, 13);
        assert_eq!(a, b);
    }

    #[test]
    fn tokens_quantised_in_parts_and_joined_are_those_quantised_at_once() {
        let xs = values(11 * 96, 8);
        let whole = QuantisedTokens::new(&xs, 96);
        let parts: Vec<QuantisedTokens> = xs
            .chunks(4 * 96)
            .map(|p| QuantisedTokens::new(p, 96))
            .collect();
        let joined = QuantisedTokens::join(&parts);
        assert_eq!(joined.tokens(), 11);
        assert_eq!(
            (&joined.qs, &joined.scales, &joined.sums, &joined.offsets),
            (&whole.qs, &whole.scales, &whole.sums, &whole.offsets)
        );
        assert_eq!(QuantisedTokens::join(&[]).tokens(), 0);
    }

    #[test]
    fn mismatched_shapes_write_nothing() {
        let (s, m, qs) = q4_rows(8, 64);
        let mut w = PackedRows::default();
        w.pack_q4(&s, &m, &qs, 64);
        let x = QuantisedTokens::new(&values(2 * 96, 1), 96);
        let mut out = vec![7.0; 16];
        product(&w, &x, &mut out, 8);
        assert!(out.iter().all(|v| *v == 7.0));
        let x = QuantisedTokens::new(&values(3 * 64, 1), 64);
        let mut short = vec![7.0; 2 * 8];
        product(&w, &x, &mut short, 8);
        assert!(short.iter().all(|v| *v == 7.0));
    }
}
