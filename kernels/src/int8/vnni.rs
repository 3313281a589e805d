//! [`super::product`] in AVX-512 VNNI's `vpdpbusd`: four byte products summed into each
//! 32-bit lane in one instruction.

use std::arch::x86_64::{
    _mm256_add_epi32, _mm256_cvtepi32_ps, _mm256_dpbusd_epi32, _mm256_fmadd_ps, _mm256_mul_ps,
    _mm256_set1_epi32, _mm256_set1_ps, _mm256_setzero_ps, _mm256_setzero_si256, _mm256_sub_epi32,
};

use super::tile::{self, Group, Tokens};
use super::{PackedRows, QuantisedTokens, TileArgs, TILE};

product_in_tiles!("avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni");

/// Group `g` of `w` times tokens `t0..t0 + T` of `x` (all present: the caller's loop), into
/// `out` from token `first` on.
#[inline]
#[target_feature(enable = "avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni")]
fn tile<const T: usize, const EIGHT_BIT: bool>((w, x, g, t0, first, out, stride): TileArgs<'_>) {
    let group = Group::new(w, g);
    let mut acc = [_mm256_setzero_ps(); T];
    for b in 0..w.blocks {
        let (v, d, m) = group.block(b);
        // The tile's tokens in this block, side by side.
        let Some(xs) = Tokens::<T>::new(x, b, t0) else {
            return;
        };
        for (t, acc) in acc.iter_mut().enumerate() {
            // Two chains of four dependent sums rather than one of eight: twice the
            // products in flight.
            let mut dots = [_mm256_setzero_si256(); 2];
            for (j, v) in v.iter().enumerate() {
                let four = _mm256_set1_epi32(xs.four(t, j));
                dots[j % 2] = _mm256_dpbusd_epi32(dots[j % 2], *v, four);
            }
            let mut dot = _mm256_add_epi32(dots[0], dots[1]);
            if EIGHT_BIT {
                dot = _mm256_sub_epi32(dot, _mm256_set1_epi32(xs.offsets[t]));
            }
            let ds = _mm256_mul_ps(d, _mm256_set1_ps(xs.scales[t]));
            *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), ds, *acc);
            if !EIGHT_BIT {
                *acc = _mm256_fmadd_ps(m, _mm256_set1_ps(xs.sums[t]), *acc);
            }
        }
    }
    tile::store(&acc, (w, g), (t0, first), out, stride);
}
