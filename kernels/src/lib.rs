//! The CPU inner loops: the row decoder's dot products of f32 activations with f32 weights
//! and with ggml's 32-value blocks (4-bit with a scale and a minimum, 8-bit with a scale),
//! element-wise GELU, layer norm and softmax ([`gelu`], [`layer_norm`], [`softmax`]), a
//! decoder's attention over its cached keys and values ([`scaled_dots`],
//! [`add_weighted_rows`]), and f32 matrix products for batched work ([`matmul`], on the
//! `gemm` crate's kernels).
//!
//! Each loop is written once, as plain Rust the compiler vectorises, and compiled twice:
//! for the baseline x86-64 (SSE2) that the workspace targets, and inside functions that
//! enable AVX2 and FMA. The wider build is picked at run time when the CPU has both, so one
//! binary runs everywhere and uses what the machine offers. Results of the two builds differ
//! in f32 rounding only (fused multiply-adds, the same order of sums). Three loops the
//! compiler vectorised badly have their AVX2 build written in vector instructions: widening
//! 4-bit blocks (to the same bits as the plain loop), the dot products of 4- and 8-bit rows
//! (`dots.rs`: a row with up to six tokens at once) and a query's scores against cached keys
//! (`attention.rs`: eight keys at once); the last two add their sums in another order than
//! the plain loops, so results differ in f32 rounding. Products of 4- and 8-bit rows with
//! many tokens quantised to 8 bits ([`int8_product`], `int8/`) run in AVX-512 VNNI's integer
//! dot products where the CPU has them and in AVX2's byte multiply-adds elsewhere, both to
//! the same bits as their plain loops.

mod attention;
mod dots;
mod elementwise;
mod int8;
mod matmul;

pub use attention::{add_weighted_rows, scaled_dots, StridedRows};
pub use dots::{dot_q4_tokens, dot_q8_tokens};
pub use elementwise::{gelu, layer_norm, softmax, swiglu};
pub use int8::{
    int8_products_fast, product as int8_product, product_tokens as int8_product_tokens, PackedRows,
    QuantisedTokens,
};
pub use matmul::{matmul, Mat, MatMut};

/// Values per quantisation block.
pub const BLOCK: usize = 32;

use std::sync::atomic::{AtomicBool, Ordering};

static BASELINE_ONLY: AtomicBool = AtomicBool::new(false);

/// Makes every loop run its baseline build whatever the CPU offers (`true`), or the widest
/// the CPU runs (`false`, the default): to measure how far the two builds' results differ.
pub fn force_baseline(on: bool) {
    BASELINE_ONLY.store(on, Ordering::Relaxed);
}

/// Whether the AVX2 + FMA builds are used.
#[cfg(target_arch = "x86_64")]
fn wide() -> bool {
    !BASELINE_ONLY.load(Ordering::Relaxed)
        && std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
}

/// `acc + a × b`, fused where the build has FMA.
#[inline(always)]
fn madd<const FMA: bool>(a: f32, b: f32, acc: f32) -> f32 {
    if FMA {
        a.mul_add(b, acc)
    } else {
        acc + a * b
    }
}

#[inline(always)]
fn f32_body<const FMA: bool>(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 16];
    let (ac, bc) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: f32 = ac
        .remainder()
        .iter()
        .zip(bc.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ac.zip(bc) {
        for i in 0..16 {
            acc[i] = madd::<FMA>(x[i], y[i], acc[i]);
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[inline(always)]
fn add_scaled_body<const FMA: bool>(out: &mut [f32], w: f32, x: &[f32]) {
    for (o, v) in out.iter_mut().zip(x) {
        *o = madd::<FMA>(w, *v, *o);
    }
}

#[inline(always)]
fn widen_q4_body(scales: &[f32], mins: &[f32], qs: &[u8], out: &mut [f32]) {
    for (((d, m), q), o) in scales
        .iter()
        .zip(mins)
        .zip(qs.chunks_exact(16))
        .zip(out.chunks_exact_mut(BLOCK))
    {
        let (lo, hi) = o.split_at_mut(16);
        for j in 0..16 {
            lo[j] = f32::from(q[j] & 15) * d + m;
            hi[j] = f32::from(q[j] >> 4) * d + m;
        }
    }
}

#[inline(always)]
fn widen_q8_body(scales: &[f32], qs: &[i8], out: &mut [f32]) {
    for ((d, q), o) in scales
        .iter()
        .zip(qs.chunks_exact(BLOCK))
        .zip(out.chunks_exact_mut(BLOCK))
    {
        for j in 0..BLOCK {
            o[j] = f32::from(q[j]) * d;
        }
    }
}

#[inline(always)]
fn q4_body(scales: &[f32], mins: &[f32], qs: &[u8], x: &[f32], sums: &[f32]) -> f32 {
    let mut acc = [0.0f32; 16];
    let mut offset = 0.0f32;
    for ((((d, m), q), xb), s) in scales
        .iter()
        .zip(mins)
        .zip(qs.chunks_exact(16))
        .zip(x.chunks_exact(BLOCK))
        .zip(sums)
    {
        offset = madd::<false>(*m, *s, offset);
        for j in 0..16 {
            let p = madd::<false>(
                f32::from(q[j] >> 4),
                xb[j + 16],
                f32::from(q[j] & 15) * xb[j],
            );
            acc[j] = madd::<false>(*d, p, acc[j]);
        }
    }
    acc.iter().sum::<f32>() + offset
}

#[inline(always)]
fn q8_body(scales: &[f32], qs: &[i8], x: &[f32]) -> f32 {
    let mut acc = [0.0f32; 16];
    for ((d, q), xb) in scales
        .iter()
        .zip(qs.chunks_exact(BLOCK))
        .zip(x.chunks_exact(BLOCK))
    {
        for j in 0..16 {
            let p = madd::<false>(f32::from(q[j + 16]), xb[j + 16], f32::from(q[j]) * xb[j]);
            acc[j] = madd::<false>(*d, p, acc[j]);
        }
    }
    acc.iter().sum()
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn f32(a: &[f32], b: &[f32]) -> f32 {
        super::f32_body::<true>(a, b)
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn add_scaled(out: &mut [f32], w: f32, x: &[f32]) {
        super::add_scaled_body::<true>(out, w, x)
    }

    /// [`super::widen_q4_body`] in explicit vector instructions, with the same unfused
    /// `q × scale + min` (so both builds widen to the same bits): written as plain Rust, the
    /// compiler vectorised it across blocks, gathering one byte from each of eight blocks per
    /// instruction, and widening took a tenth of a prefill.
    #[target_feature(enable = "avx2,fma")]
    #[allow(unsafe_code)]
    pub(super) fn widen_q4(scales: &[f32], mins: &[f32], qs: &[u8], out: &mut [f32]) {
        use std::arch::x86_64::{
            __m128i, _mm256_add_ps, _mm256_cvtepi32_ps, _mm256_cvtepu8_epi32, _mm256_mul_ps,
            _mm256_set1_ps, _mm256_storeu_ps, _mm_and_si128, _mm_loadu_si128, _mm_set1_epi8,
            _mm_srli_epi16, _mm_srli_si128,
        };
        let low = _mm_set1_epi8(15);
        for (((d, m), q), o) in scales
            .iter()
            .zip(mins)
            .zip(qs.chunks_exact(16))
            .zip(out.chunks_exact_mut(super::BLOCK))
        {
            // SAFETY: `q` is 16 bytes (`chunks_exact(16)`), which an unaligned load reads.
            let q = unsafe { _mm_loadu_si128(q.as_ptr().cast::<__m128i>()) };
            let (d, m) = (_mm256_set1_ps(*d), _mm256_set1_ps(*m));
            // Values 0..16 are the low nibbles, 16..32 the high ones.
            let halves = [
                _mm_and_si128(q, low),
                _mm_and_si128(_mm_srli_epi16(q, 4), low),
            ];
            for (half, bytes) in halves.into_iter().enumerate() {
                for (eighth, bytes) in [bytes, _mm_srli_si128(bytes, 8)].into_iter().enumerate() {
                    let v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
                    let v = _mm256_add_ps(_mm256_mul_ps(v, d), m);
                    let at = &mut o[half * 16 + eighth * 8..][..8];
                    // SAFETY: `at` is 8 values (`o` is 32, `chunks_exact(BLOCK)`), which an
                    // unaligned store writes.
                    unsafe { _mm256_storeu_ps(at.as_mut_ptr(), v) };
                }
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn widen_q8(scales: &[f32], qs: &[i8], out: &mut [f32]) {
        super::widen_q8_body(scales, qs, out)
    }
}

/// `a · b` over the shorter of the two.
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if wide() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above), which is all that calling a
        // function compiled with `target_feature(enable = "avx2,fma")` requires.
        #[allow(unsafe_code)]
        return unsafe { avx2::f32(a, b) };
    }
    f32_body::<false>(a, b)
}

/// `out += w × x` (over the shorter of the two).
pub fn add_scaled(out: &mut [f32], w: f32, x: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    if wide() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        #[allow(unsafe_code)]
        return unsafe { avx2::add_scaled(out, w, x) };
    }
    add_scaled_body::<false>(out, w, x)
}

/// 4-bit blocks (laid out as for [`dot_q4`]) widened to f32 into `out`: value `j` of block
/// `b` is `q × scales[b] + mins[b]`.
pub fn widen_q4(scales: &[f32], mins: &[f32], qs: &[u8], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if wide() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        #[allow(unsafe_code)]
        return unsafe { avx2::widen_q4(scales, mins, qs, out) };
    }
    widen_q4_body(scales, mins, qs, out)
}

/// 8-bit blocks (as for [`dot_q8`]) widened to f32 into `out`.
pub fn widen_q8(scales: &[f32], qs: &[i8], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if wide() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        #[allow(unsafe_code)]
        return unsafe { avx2::widen_q8(scales, qs, out) };
    }
    widen_q8_body(scales, qs, out)
}

/// `Σ_b scales[b] · Σ_j q[b, j] · x[32b + j] + Σ_b mins[b] · sums[b]`: a row of 4-bit blocks
/// (`qs`: 16 bytes a block, value `j` in the low nibble of byte `j` and value `j + 16` in its
/// high nibble, as ggml stores Q4_0 and Q4_1) times `x`, where `sums[b]` is the sum of
/// block `b` of `x`. Blocks past the shortest input are left out.
pub fn dot_q4(scales: &[f32], mins: &[f32], qs: &[u8], x: &[f32], sums: &[f32]) -> f32 {
    let mut out = [0.0];
    dot_q4_tokens(scales, mins, qs, &[x], &[sums], &mut out);
    out[0]
}

/// `Σ_b scales[b] · Σ_j q[b, j] · x[32b + j]`: a row of signed 8-bit blocks (32 bytes a
/// block, ggml's Q8_0) times `x`. Blocks past the shortest input are left out.
pub fn dot_q8(scales: &[f32], qs: &[i8], x: &[f32]) -> f32 {
    let mut out = [0.0];
    dot_q8_tokens(scales, qs, &[x], &mut out);
    out[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xs(n: usize) -> Vec<f32> {
        (0..n)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
            .collect()
    }

    fn close(a: f32, b: f32) -> bool {
        (a - b).abs() <= 1e-4 * b.abs().max(1.0)
    }

    #[test]
    fn every_build_gives_the_plain_sums() {
        let (a, b) = (xs(100), xs(103)[3..].to_vec());
        let want: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!(close(dot_f32(&a, &b), want));
        assert!(close(f32_body::<false>(&a, &b), want));

        let mut sum = b.clone();
        add_scaled(&mut sum, 0.5, &a);
        assert!(sum
            .iter()
            .zip(a.iter().zip(&b))
            .all(|(s, (x, y))| close(*s, y + 0.5 * x)));

        // Two 4-bit blocks: value j of block b is nibble (j × 5 + b) mod 16.
        let x = xs(64);
        let nibble = |b: usize, j: usize| ((j * 5 + b) % 16) as u8;
        let qs: Vec<u8> = (0..2)
            .flat_map(|b| (0..16).map(move |j| nibble(b, j) | (nibble(b, j + 16) << 4)))
            .collect();
        let (scales, mins) = ([0.5, -0.25], [-1.0, 2.0]);
        let sums: Vec<f32> = x.chunks(BLOCK).map(|c| c.iter().sum()).collect();
        let want: f32 = (0..64)
            .map(|i| (f32::from(nibble(i / 32, i % 32)) * scales[i / 32] + mins[i / 32]) * x[i])
            .sum();
        assert!(close(dot_q4(&scales, &mins, &qs, &x, &sums), want));
        let mut wide4 = vec![0.0; 64];
        widen_q4(&scales, &mins, &qs, &mut wide4);
        assert_eq!(wide4[33], f32::from(nibble(1, 1)) * -0.25 + 2.0);
        assert!(close(q4_body(&scales, &mins, &qs, &x, &sums), want));

        // Both builds widen to the same bits, over many blocks.
        let (many_scales, many_mins) = (xs(40), xs(43)[3..].to_vec());
        let many: Vec<u8> = (0..40 * 16).map(|i| (i * 73 % 256) as u8).collect();
        let (mut wide, mut plain) = (vec![0.0; 40 * BLOCK], vec![0.0; 40 * BLOCK]);
        widen_q4(&many_scales, &many_mins, &many, &mut wide);
        widen_q4_body(&many_scales, &many_mins, &many, &mut plain);
        assert_eq!(wide, plain);
        assert_eq!(
            wide[17 * BLOCK + 20],
            f32::from(many[17 * 16 + 4] >> 4) * many_scales[17] + many_mins[17]
        );

        let q8: Vec<i8> = (0..64).map(|i| (i as i8).wrapping_mul(7)).collect();
        let want: f32 = (0..64)
            .map(|i| f32::from(q8[i]) * scales[i / 32] * x[i])
            .sum();
        assert!(close(dot_q8(&scales, &q8, &x), want));
        let mut wide8 = vec![0.0; 64];
        widen_q8(&scales, &q8, &mut wide8);
        assert_eq!(wide8[40], f32::from(q8[40]) * -0.25);
        assert!(close(q8_body(&scales, &q8, &x), want));
    }
}
