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
//!
//! 4-bit rows: a tile of tokens is broadcast once ([`Broadcast`]) for a chunk of groups of
//! rows, and each of a group's packed vectors is multiplied with every token of the tile
//! before the next, the tile's sums in registers. With AVX2's sixteen vector registers,
//! broadcasting four bytes for each multiply (as the VNNI build does) spent a quarter of the
//! vector pipes' work on broadcasts, and the accumulators of a tile of eight tokens beside a
//! block's eight vectors went through memory. 8-bit rows, whose sign handling needs the
//! registers, keep the VNNI build's order.

use std::arch::x86_64::{
    __m256, __m256i, _mm256_abs_epi8, _mm256_add_epi16, _mm256_add_epi32, _mm256_cvtepi32_ps,
    _mm256_fmadd_ps, _mm256_madd_epi16, _mm256_maddubs_epi16, _mm256_mul_ps, _mm256_set1_epi16,
    _mm256_set1_epi32, _mm256_set1_epi8, _mm256_set1_ps, _mm256_setzero_ps, _mm256_setzero_si256,
    _mm256_sign_epi8, _mm256_xor_si256,
};
use std::cell::RefCell;
use std::ops::Range;

use super::tile::{self, Group, Tokens};
use super::{PackedRows, QuantisedTokens, GROUP, PACKED_BLOCK, TILE};

/// Tokens of a 4-bit tile: each holds a 16-bit and a 32-bit sum in registers, beside one
/// packed vector, its block's scales and minimums, and the ones that widen: 15 of AVX2's 16.
const TILE_4BIT: usize = 5;

/// Blocks of a tile broadcast at a time: 5 tokens × 16 blocks × 256 bytes, 20 KiB, stay in
/// a first-level cache of 32 KiB beside a group's packed blocks.
const SPAN: usize = 16;

/// Bytes of packed rows multiplied with one tile before the next tile: part of a
/// second-level cache, which the rows are read from once a tile.
const CHUNK_BYTES: usize = 192 * 1024;

thread_local! {
    /// A thread's broadcast tile, its memory kept from one product to the next.
    static BROADCAST: RefCell<Broadcast> = RefCell::new(Broadcast::default());
}

/// A tile of `T` tokens in a span of blocks as the multiply-adds read them: a token's values
/// `4j..4j + 4` of a block in every 32-bit lane of vector `j`, its scale and its block's sum
/// in every lane; and the tile's sums so far for each group of a chunk.
#[derive(Default)]
struct Broadcast {
    /// Block `b` of the span, token `t` at `b × T + t`.
    values: Vec<[__m256i; 8]>,
    scales: Vec<__m256>,
    sums: Vec<__m256>,
    /// Group `i` of the chunk, token `t` at `i × T + t`.
    acc: Vec<__m256>,
}

impl Broadcast {
    /// Blocks `blocks` of tokens `t0..t0 + T` of `x`; false when they reach past `x`'s.
    #[target_feature(enable = "avx2,fma")]
    fn fill<const T: usize>(
        &mut self,
        x: &QuantisedTokens,
        t0: usize,
        blocks: Range<usize>,
    ) -> bool {
        let n = blocks.len() * T;
        self.values.resize(n, [_mm256_setzero_si256(); 8]);
        self.scales.resize(n, _mm256_setzero_ps());
        self.sums.resize(n, _mm256_setzero_ps());
        let tiles = self
            .values
            .chunks_exact_mut(T)
            .zip(self.scales.chunks_exact_mut(T));
        for (b, ((values, scales), sums)) in blocks.zip(tiles.zip(self.sums.chunks_exact_mut(T))) {
            let Some(xs) = Tokens::<T>::new(x, b, t0) else {
                return false;
            };
            for (t, ((values, scale), sum)) in values.iter_mut().zip(scales).zip(sums).enumerate() {
                *values = std::array::from_fn(|j| _mm256_set1_epi32(xs.four(t, j)));
                *scale = _mm256_set1_ps(xs.scales[t]);
                *sum = _mm256_set1_ps(xs.sums[t]);
            }
        }
        true
    }
}

/// `out[(t − tokens.start) × stride + r]` = row `r` of `w` · token `t` of `x` (the caller
/// checked the shapes).
#[target_feature(enable = "avx2,fma")]
pub(super) fn product(
    w: &PackedRows,
    x: &QuantisedTokens,
    tokens: Range<usize>,
    out: &mut [f32],
    stride: usize,
) {
    if w.eight_bit {
        return eight_bit_product(w, x, tokens, out, stride);
    }
    let groups = w.rows.div_ceil(GROUP);
    let per_chunk = (CHUNK_BYTES / (w.blocks * PACKED_BLOCK).max(1)).max(1);
    BROADCAST.with_borrow_mut(|xs| {
        for c in (0..groups).step_by(per_chunk) {
            let chunk = c..(c + per_chunk).min(groups);
            for (t0, n) in tile::tiles(tokens.clone(), TILE_4BIT) {
                let args = (
                    w,
                    x,
                    chunk.clone(),
                    (t0, tokens.start),
                    &mut *out,
                    stride,
                    &mut *xs,
                );
                match n {
                    1 => four_bit_tile::<1>(args),
                    2 => four_bit_tile::<2>(args),
                    3 => four_bit_tile::<3>(args),
                    4 => four_bit_tile::<4>(args),
                    _ => four_bit_tile::<TILE_4BIT>(args),
                }
            }
        }
    });
}

/// The rows, the tokens, the chunk's groups, the tile's first token and the product's,
/// the output and its stride, and the thread's broadcast tile.
type Args<'a> = (
    &'a PackedRows,
    &'a QuantisedTokens,
    Range<usize>,
    (usize, usize),
    &'a mut [f32],
    usize,
    &'a mut Broadcast,
);

/// Groups `groups` of 4-bit rows `w` times tokens `t0..t0 + T` of `x` (all present: the
/// caller's loop), into `out` from token `first` on, span of blocks after span, each row's
/// sums carried from one span to the next, so that they add the blocks in order, as the
/// other builds do. Each packed vector is multiplied with every token before the next; a
/// block's eight 16-bit products are added in 16 bits, then widened once.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn four_bit_tile<const T: usize>((w, x, groups, (t0, first), out, stride, xs): Args<'_>) {
    let ones = _mm256_set1_epi16(1);
    // Spans of equal length (but the last), as few as [`SPAN`] allows.
    let span = w.blocks.div_ceil(w.blocks.div_ceil(SPAN).max(1)).max(1);
    xs.acc.clear();
    xs.acc.resize(groups.len() * T, _mm256_setzero_ps());
    for b0 in (0..w.blocks).step_by(span) {
        if !xs.fill::<T>(x, t0, b0..(b0 + span).min(w.blocks)) {
            return;
        }
        for (g, sums_so_far) in groups.clone().zip(xs.acc.chunks_exact_mut(T)) {
            let group = Group::new(w, g);
            let Ok(sums_so_far) = <&mut [__m256; T]>::try_from(sums_so_far) else {
                return;
            };
            let mut acc = *sums_so_far;
            let blocks = xs.values.chunks_exact(T).zip(xs.scales.chunks_exact(T));
            for (b, ((values, scales), sums)) in blocks.zip(xs.sums.chunks_exact(T)).enumerate() {
                let (v, d, m) = group.block(b0 + b);
                let mut pairs = [_mm256_setzero_si256(); T];
                for (j, v) in v.iter().enumerate() {
                    for (t, pairs) in pairs.iter_mut().enumerate() {
                        let products = _mm256_maddubs_epi16(*v, values[t][j]);
                        *pairs = _mm256_add_epi16(*pairs, products);
                    }
                }
                for (t, acc) in acc.iter_mut().enumerate() {
                    let dot = _mm256_madd_epi16(pairs[t], ones);
                    let ds = _mm256_mul_ps(d, scales[t]);
                    *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), ds, *acc);
                    *acc = _mm256_fmadd_ps(m, sums[t], *acc);
                }
            }
            *sums_so_far = acc;
        }
    }
    for (g, acc) in groups.zip(xs.acc.chunks_exact(T)) {
        tile::store(acc, (w, g), (t0, first), out, stride);
    }
}

/// [`product`] for 8-bit rows: group after group, its tokens in tiles of up to [`TILE`].
#[target_feature(enable = "avx2,fma")]
fn eight_bit_product(
    w: &PackedRows,
    x: &QuantisedTokens,
    tokens: Range<usize>,
    out: &mut [f32],
    stride: usize,
) {
    let first = tokens.start;
    tile::each_tile(w.rows, tokens, |g, t0, n| {
        let args = (w, x, g, t0, first, &mut *out, stride);
        match n {
            1 => eight_bit_tile::<1>(args),
            2 => eight_bit_tile::<2>(args),
            3 => eight_bit_tile::<3>(args),
            4 => eight_bit_tile::<4>(args),
            5 => eight_bit_tile::<5>(args),
            6 => eight_bit_tile::<6>(args),
            7 => eight_bit_tile::<7>(args),
            _ => eight_bit_tile::<TILE>(args),
        }
    });
}

/// Group `g` of 8-bit rows `w` times tokens `t0..t0 + T` of `x` (all present: the caller's
/// loop), into `out` from token `first` on: each weight's magnitude by the token's value
/// with the weight's sign, every 16-bit pair widened.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn eight_bit_tile<const T: usize>((w, x, g, t0, first, out, stride): super::TileArgs<'_>) {
    let group = Group::new(w, g);
    let ones = _mm256_set1_epi16(1);
    let flip = _mm256_set1_epi8(i8::MIN);
    let mut acc = [_mm256_setzero_ps(); T];
    for b in 0..w.blocks {
        let (v, d, _) = group.block(b);
        // The signed weights, and their magnitudes as unsigned bytes (128 for −128 too).
        let signed = v.map(|v| _mm256_xor_si256(v, flip));
        let magnitudes = signed.map(|s| _mm256_abs_epi8(s));
        let Some(xs) = Tokens::<T>::new(x, b, t0) else {
            return;
        };
        for (t, acc) in acc.iter_mut().enumerate() {
            let mut dots = [_mm256_setzero_si256(); 2];
            for j in 0..8 {
                let x = _mm256_sign_epi8(_mm256_set1_epi32(xs.four(t, j)), signed[j]);
                let pairs = _mm256_maddubs_epi16(magnitudes[j], x);
                dots[j % 2] = _mm256_add_epi32(dots[j % 2], _mm256_madd_epi16(pairs, ones));
            }
            let dot = _mm256_add_epi32(dots[0], dots[1]);
            let ds = _mm256_mul_ps(d, _mm256_set1_ps(xs.scales[t]));
            *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), ds, *acc);
        }
    }
    tile::store(&acc, (w, g), (t0, first), out, stride);
}
