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
    __m256i, _mm256_abs_epi8, _mm256_add_epi16, _mm256_add_epi32, _mm256_cvtepi32_ps,
    _mm256_fmadd_ps, _mm256_madd_epi16, _mm256_maddubs_epi16, _mm256_mul_ps, _mm256_set1_epi16,
    _mm256_set1_epi32, _mm256_set1_epi8, _mm256_set1_ps, _mm256_setzero_ps, _mm256_setzero_si256,
    _mm256_sign_epi8, _mm256_xor_si256,
};

use super::tile::{self, Group, Tokens};
use super::{PackedRows, QuantisedTokens, TileArgs, GROUP, TILE};

product_in_tiles!("avx2,fma");

/// Group `g` of `w` times tokens `t0..t0 + T` of `x` (all present: the caller's loop), into
/// `out` from token `first` on.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn tile<const T: usize, const EIGHT_BIT: bool>((w, x, g, t0, first, out, stride): TileArgs<'_>) {
    let group = Group::new(w, g);
    let ones = _mm256_set1_epi16(1);
    let flip = _mm256_set1_epi8(i8::MIN);
    let mut acc = [_mm256_setzero_ps(); T];
    for b in 0..w.blocks {
        let (v, d, m) = group.block(b);
        // 8-bit rows: the signed weights, and their magnitudes as unsigned bytes (128 for
        // −128 too).
        let signed = if EIGHT_BIT {
            v.map(|v| _mm256_xor_si256(v, flip))
        } else {
            v
        };
        let magnitudes: [__m256i; 8] = if EIGHT_BIT {
            signed.map(|s| _mm256_abs_epi8(s))
        } else {
            v
        };
        let Some(xs) = Tokens::<T>::new(x, b, t0) else {
            return;
        };
        for (t, acc) in acc.iter_mut().enumerate() {
            let four = |j: usize| _mm256_set1_epi32(xs.four(t, j));
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
            let ds = _mm256_mul_ps(d, _mm256_set1_ps(xs.scales[t]));
            *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), ds, *acc);
            if !EIGHT_BIT {
                *acc = _mm256_fmadd_ps(m, _mm256_set1_ps(xs.sums[t]), *acc);
            }
        }
    }
    tile::store(&acc, (w, g), (t0, first), out, stride);
}
