//! Products of 4- and 8-bit weight rows with activations quantised to 8 bits, in integer
//! dot products: AVX-512 VNNI's `vpdpbusd` multiplies 32 unsigned weight bytes by 32 signed
//! activation bytes and adds them four at a time into eight 32-bit sums, one instruction for
//! what takes four fused multiply-adds in f32, after the weights were widened. Without VNNI,
//! AVX2's `vpmaddubsw` and `vpmaddwd` do the same in two to three instructions ([`madd`]).
//!
//! Each token's 32-value block `x` becomes `round(x / s)` with `s = max |x| / 127`; each
//! weight row's block is `q × d + m` (4-bit `q`, Q4_0's `m` being `−8d`) or `q × d` (signed
//! 8-bit `q`, added to 128 so that it is unsigned). A row's value for a token is
//! `Σ_b fma(Σ q·x_q as f32, d·s, ·)` then `+ m · (s · Σ x_q)`, block after block: the integer
//! sums are exact, so every build (the plain loops, AVX2 and VNNI) gives the same bits, and a
//! verifier's fast pass is the same on every machine that runs it.
//!
//! Eight rows are packed side by side, lane `i` of a vector holding four consecutive values
//! of row `i`, so that one broadcast of four activation bytes serves eight rows, and several
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
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if n == GROUP && super::wide() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        #[allow(unsafe_code)]
        {
            done = unsafe { avx2::transpose_group(out, &rows, blocks) };
        }
    }
    for (b, out) in out
        .chunks_exact_mut(GROUP)
        .take(blocks)
        .enumerate()
        .skip(done)
    {
        for (o, row) in out.iter_mut().zip(&rows[..n]) {
            *o = row[b];
        }
    }
}

/// Whether [`product`] runs in integer vector instructions on this CPU (AVX-512 VNNI, or
/// AVX2 and FMA); elsewhere it runs plain loops, to the same bits but far slower than f32
/// products.
pub fn int8_products_fast() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        super::wide()
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
    if super::wide() {
        if vnni() {
            // SAFETY: the CPU has AVX2, FMA and AVX-512 F, BW, VL and VNNI (checked just
            // above), all that calling a function compiled with those target features requires.
            #[allow(unsafe_code)]
            return unsafe { vnni::product(w, x, tokens, out, stride) };
        }
        // SAFETY: the CPU has AVX2 and FMA (checked above), all that `madd::product` requires.
        #[allow(unsafe_code)]
        return unsafe { madd::product(w, x, tokens, out, stride) };
    }
    product_plain(w, x, tokens, out, stride)
}

/// [`product`] in plain loops: the reference both vector builds match bit for bit.
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

/// A vector build's [`product`], `product(w, x, tokens, out, stride)` compiled with
/// `$features`: group after group, its tokens in tiles of up to [`TILE`] ([`tile::each_tile`]),
/// each tile by the module's `tile::<tokens, 8-bit rows>(w, x, g, t0, first, out, stride)`.
#[cfg(target_arch = "x86_64")]
macro_rules! product_in_tiles {
    ($features:literal) => {
        #[target_feature(enable = $features)]
        pub(super) fn product(
            w: &PackedRows,
            x: &QuantisedTokens,
            tokens: std::ops::Range<usize>,
            out: &mut [f32],
            stride: usize,
        ) {
            let first = tokens.start;
            tile::each_tile(w.rows, tokens, |g, t0, n| {
                let args = (w, x, g, t0, first, &mut *out, stride);
                match (n, w.eight_bit) {
                    (1, false) => tile::<1, false>(args),
                    (2, false) => tile::<2, false>(args),
                    (3, false) => tile::<3, false>(args),
                    (4, false) => tile::<4, false>(args),
                    (5, false) => tile::<5, false>(args),
                    (6, false) => tile::<6, false>(args),
                    (7, false) => tile::<7, false>(args),
                    (_, false) => tile::<TILE, false>(args),
                    (1, true) => tile::<1, true>(args),
                    (2, true) => tile::<2, true>(args),
                    (3, true) => tile::<3, true>(args),
                    (4, true) => tile::<4, true>(args),
                    (5, true) => tile::<5, true>(args),
                    (6, true) => tile::<6, true>(args),
                    (7, true) => tile::<7, true>(args),
                    (_, true) => tile::<TILE, true>(args),
                }
            });
        }
    };
}

/// A tile's arguments: the rows, the tokens, the group, the tile's first token, the first
/// token of the product, its output and the output's stride.
#[cfg(target_arch = "x86_64")]
type TileArgs<'a> = (
    &'a PackedRows,
    &'a QuantisedTokens,
    usize,
    usize,
    usize,
    &'a mut [f32],
    usize,
);

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2;

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod tile;

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod madd;

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod vnni;

#[cfg(test)]
mod tests;
