//! Element-wise work between matrix products: GELU, SwiGLU, layer normalisation of rows,
//! softmax.
//!
//! `exp` and `erf` are polynomial approximations written so that loops over slices
//! vectorise (no calls into libm, integer tricks for the powers of two): a vectorised loop
//! is what the matrix products leave as the cost of a layer. Their error is far below the
//! job tolerances (erf within 1.5 · 10⁻⁷, exp within a few units in the last place); the
//! canonical path keeps libm.

#[cfg(target_arch = "x86_64")]
use crate::wide;

const LOG2_E: f32 = std::f32::consts::LOG2_E;
// ln 2 split in two, so `n · LN2_HI` is exact for the n that occur and `r` keeps its bits.
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = 1.428_606_8e-6;
// 1.5 · 2²³: adding it to a float below 2²² rounds it to an integer held in the low bits.
const ROUND: f32 = 12_582_912.0;

#[inline(always)]
fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// `e^x`, for x in [−87, 88] (clamped there: beyond, f32 under- or overflows anyway).
#[inline(always)]
fn exp<const FMA: bool>(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    let t = madd::<FMA>(x, LOG2_E, ROUND);
    let n = t - ROUND;
    let n_int = (t.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
    let r = madd::<FMA>(n, -LN2_LO, madd::<FMA>(n, -LN2_HI, x));
    // Taylor series to r⁷ on |r| ≤ ln 2 / 2: the first omitted term is below 2 · 10⁻⁹.
    let mut p = 1.0 / 5040.0;
    for c in [
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ] {
        p = madd::<FMA>(p, r, c);
    }
    p * f32::from_bits((n_int.wrapping_add(127) << 23) as u32)
}

/// `erf(x)`, Abramowitz and Stegun 7.1.26 (absolute error ≤ 1.5 · 10⁻⁷).
#[inline(always)]
fn erf<const FMA: bool>(x: f32) -> f32 {
    let z = x.abs();
    let t = 1.0 / madd::<FMA>(0.327_591_1, z, 1.0);
    let mut p = 1.061_405_4;
    for c in [-1.453_152_1, 1.421_413_8, -0.284_496_72, 0.254_829_6] {
        p = madd::<FMA>(p, t, c);
    }
    let y = 1.0 - p * t * exp::<FMA>(-z * z);
    y.copysign(x)
}

#[inline(always)]
fn gelu_body<const FMA: bool>(x: &mut [f32]) {
    for v in x.iter_mut() {
        let e = erf::<FMA>(*v * std::f32::consts::FRAC_1_SQRT_2);
        *v = 0.5 * *v * (1.0 + e);
    }
}

#[inline(always)]
fn swiglu_body<const FMA: bool>(out: &mut [f32], gate: &[f32], up: &[f32]) {
    for ((o, g), u) in out.iter_mut().zip(gate).zip(up) {
        *o = *g / (1.0 + exp::<FMA>(-*g)) * u;
    }
}

/// Sum of `x` over 16 lanes, so that the loop vectorises.
#[inline(always)]
fn lane_sum(x: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0.0f32; 16];
    let chunks = x.chunks_exact(16);
    let tail: f32 = chunks.remainder().iter().map(|v| f(*v)).sum();
    for c in chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += f(*v);
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[inline(always)]
fn lane_max(x: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; 16];
    let chunks = x.chunks_exact(16);
    let tail = chunks
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |m, v| if *v > m { *v } else { m });
    for c in chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a = if *v > *a { *v } else { *a };
        }
    }
    acc.iter().fold(tail, |m, v| if *v > m { *v } else { m })
}

#[inline(always)]
fn layer_norm_body<const FMA: bool>(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = gamma.len().max(1);
    for row in x.chunks_exact_mut(n) {
        let mean = lane_sum(row, |v| v) / n as f32;
        let var = lane_sum(row, |v| (v - mean) * (v - mean)) / n as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *v = madd::<FMA>((*v - mean) * inv, *g, *b);
        }
    }
}

#[inline(always)]
fn softmax_body<const FMA: bool>(x: &mut [f32]) {
    let max = lane_max(x);
    for v in x.iter_mut() {
        *v = exp::<FMA>(*v - max);
    }
    let inv = 1.0 / lane_sum(x, |v| v);
    for v in x.iter_mut() {
        *v *= inv;
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn gelu(x: &mut [f32]) {
        super::gelu_body::<true>(x)
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn swiglu(out: &mut [f32], gate: &[f32], up: &[f32]) {
        super::swiglu_body::<true>(out, gate, up)
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn layer_norm(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
        super::layer_norm_body::<true>(x, gamma, beta, eps)
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn softmax(x: &mut [f32]) {
        super::softmax_body::<true>(x)
    }
}

/// GELU, `x · (1 + erf(x / √2)) / 2`, in place.
pub fn gelu(x: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if wide() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        #[allow(unsafe_code)]
        return unsafe { avx2::gelu(x) };
    }
    gelu_body::<false>(x)
}

/// SwiGLU, `silu(gate) × up` (`silu(g) = g / (1 + e^−g)`), value by value into `out`, as
/// far as the shortest of the three reaches.
pub fn swiglu(out: &mut [f32], gate: &[f32], up: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    if wide() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        #[allow(unsafe_code)]
        return unsafe { avx2::swiglu(out, gate, up) };
    }
    swiglu_body::<false>(out, gate, up)
}

/// Layer normalisation of each row of `gamma.len()` values of `x`, in place: the row less
/// its mean, over its standard deviation (`eps` added to the variance), times `gamma`,
/// plus `beta`. A trailing part shorter than a row is left as it is.
pub fn layer_norm(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    #[cfg(target_arch = "x86_64")]
    if wide() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        #[allow(unsafe_code)]
        return unsafe { avx2::layer_norm(x, gamma, beta, eps) };
    }
    layer_norm_body::<false>(x, gamma, beta, eps)
}

/// Softmax of `x` in place: `e^(x − max)` over their sum.
pub fn softmax(x: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if wide() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        #[allow(unsafe_code)]
        return unsafe { avx2::softmax(x) };
    }
    softmax_body::<false>(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builds() -> [bool; 2] {
        [true, false]
    }

    #[test]
    fn exp_is_within_a_few_ulps_of_libm_over_its_range() {
        let mut worst = 0.0f64;
        for i in -8700..8800 {
            let x = i as f32 / 100.0 + 0.003;
            for ours in [exp::<true>(x), exp::<false>(x)] {
                let want = (x as f64).exp();
                worst = worst.max(((ours as f64 - want) / want).abs());
            }
        }
        assert!(worst < 1e-6, "worst relative error {worst}");
        assert_eq!(exp::<false>(-1000.0), exp::<false>(-87.0));
    }

    #[test]
    fn gelu_matches_the_erf_definition_in_both_builds() {
        let xs: Vec<f32> = (-1200..=1200).map(|i| i as f32 / 100.0).collect();
        for wide_build in builds() {
            crate::force_baseline(!wide_build);
            let mut ys = xs.clone();
            gelu(&mut ys);
            for (x, y) in xs.iter().zip(&ys) {
                let want =
                    0.5 * (*x as f64) * (1.0 + libm::erf(*x as f64 / std::f64::consts::SQRT_2));
                assert!(
                    (*y as f64 - want).abs() < 2e-6 * (1.0 + x.abs() as f64),
                    "gelu({x}) = {y}, want {want}"
                );
            }
        }
        crate::force_baseline(false);
    }

    #[test]
    fn swiglu_is_within_a_few_ulps_of_its_definition() {
        let gate: Vec<f32> = (0..400).map(|i| (i as f32 - 200.0) / 9.0).collect();
        let up: Vec<f32> = (0..400)
            .map(|i| ((i * 7 % 13) as f32 - 6.0) / 3.0)
            .collect();
        for fma in builds() {
            let mut out = vec![f32::NAN; 401];
            if fma {
                swiglu(&mut out, &gate, &up);
            } else {
                swiglu_body::<false>(&mut out, &gate, &up);
            }
            for ((o, g), u) in out.iter().zip(&gate).zip(&up) {
                let (g, u) = (f64::from(*g), f64::from(*u));
                let want = g / (1.0 + (-g).exp()) * u;
                assert!(
                    (f64::from(*o) - want).abs() <= 4e-7 * want.abs() + 1e-30,
                    "{g} {u}: {o} vs {want}"
                );
            }
            assert!(out[400].is_nan(), "past the inputs: left alone");
        }
    }

    #[test]
    fn softmax_sums_to_one_and_keeps_the_order() {
        let mut x: Vec<f32> = (0..37).map(|i| (i as f32 * 0.7).sin() * 20.0).collect();
        let before = x.clone();
        softmax(&mut x);
        assert!((x.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        let want: Vec<f64> = {
            let m = before.iter().cloned().fold(f32::MIN, f32::max) as f64;
            let e: Vec<f64> = before.iter().map(|v| (*v as f64 - m).exp()).collect();
            let s: f64 = e.iter().sum();
            e.iter().map(|v| v / s).collect()
        };
        for (a, b) in x.iter().zip(want) {
            assert!((*a as f64 - b).abs() < 1e-6);
        }
    }

    #[test]
    fn layer_norm_gives_each_row_zero_mean_and_unit_variance_before_the_affine_part() {
        let (n, rows) = (384, 3);
        let mut x: Vec<f32> = (0..n * rows)
            .map(|i| (i as f32 * 0.37).cos() * 3.0 + 1.0)
            .collect();
        let ones = vec![1.0f32; n];
        let zeros = vec![0.0f32; n];
        layer_norm(&mut x, &ones, &zeros, 1e-12);
        for row in x.chunks_exact(n) {
            let mean: f32 = row.iter().sum::<f32>() / n as f32;
            let var: f32 = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n as f32;
            assert!(
                mean.abs() < 1e-5 && (var - 1.0).abs() < 1e-4,
                "mean {mean}, var {var}"
            );
        }
    }
}
