//! Deterministic f32 kernels. See the module docs of [`crate::canonical`] for the rules.

/// `y[r, o] = b[o] + Σ_i x[r, i] · w[o, i]` with `w` in `[out, in]` layout; the sum runs
/// over `i` ascending, starting from 0.0, and the bias is added last.
///
/// The loops run `i` outside and `o` inside over a transposed copy of `w`: every output keeps
/// its own sum in the same order, one product and one addition per step, so the result is
/// the same bits as the plain loop's, and the compiler can run several outputs per
/// instruction (each lane an independent sum, nothing reassociated).
pub fn linear(
    x: &[f32],
    rows: usize,
    w: &[f32],
    b: Option<&[f32]>,
    d_in: usize,
    d_out: usize,
) -> Vec<f32> {
    let mut wt = vec![0.0f32; d_in * d_out];
    for (o, wo) in w.chunks_exact(d_in.max(1)).take(d_out).enumerate() {
        for (i, v) in wo.iter().enumerate() {
            wt[i * d_out + o] = *v;
        }
    }
    let mut y = vec![0.0f32; rows * d_out];
    for (xr, acc) in x
        .chunks_exact(d_in.max(1))
        .zip(y.chunks_exact_mut(d_out.max(1)))
        .take(rows)
    {
        for (xi, wi) in xr.iter().zip(wt.chunks_exact(d_out.max(1))) {
            for (a, wv) in acc.iter_mut().zip(wi) {
                *a += *xi * *wv;
            }
        }
        if let Some(b) = b {
            for (a, bo) in acc.iter_mut().zip(b) {
                *a += *bo;
            }
        }
    }
    y
}

/// ReLU in place.
pub fn relu(x: &mut [f32]) {
    for v in x.iter_mut() {
        if *v < 0.0 {
            *v = 0.0;
        }
    }
}

/// GELU (erf form): `x · (1 + erf(x / √2)) / 2`, with `libm::erff`.
pub fn gelu(x: &mut [f32]) {
    for v in x.iter_mut() {
        *v = *v * 0.5 * (1.0 + libm::erff(*v * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// SiLU: `x · σ(x)`, with `libm::expf`.
pub fn silu(x: f32) -> f32 {
    x / (1.0 + libm::expf(-x))
}

/// Softmax of each row of length `n`, in place: max, then `exp(x − max)` summed ascending.
pub fn softmax_rows(x: &mut [f32], n: usize) {
    for row in x.chunks_exact_mut(n) {
        let mut max = f32::NEG_INFINITY;
        for v in row.iter() {
            if *v > max {
                max = *v;
            }
        }
        let mut sum = 0.0f32;
        for v in row.iter_mut() {
            *v = libm::expf(*v - max);
            sum += *v;
        }
        for v in row.iter_mut() {
            *v /= sum;
        }
    }
}

/// LayerNorm over rows of length `n` (biased variance, two passes, sums ascending).
pub fn layer_norm(x: &mut [f32], n: usize, gamma: &[f32], beta: &[f32], eps: f32) {
    for row in x.chunks_exact_mut(n) {
        let mut sum = 0.0f32;
        for v in row.iter() {
            sum += *v;
        }
        let mean = sum / n as f32;
        let mut var = 0.0f32;
        for v in row.iter() {
            let d = *v - mean;
            var += d * d;
        }
        let inv = 1.0 / libm::sqrtf(var / n as f32 + eps);
        for (i, v) in row.iter_mut().enumerate() {
            *v = (*v - mean) * inv * gamma[i] + beta[i];
        }
    }
}

/// Index of the largest value; ties go to the lowest index.
pub fn argmax(x: &[f32]) -> usize {
    let mut best = 0;
    for (i, v) in x.iter().enumerate() {
        if *v > x[best] {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_matches_hand_computation() {
        // x = [[1, 2]], w = [[3, 4], [5, 6]] (out × in), b = [0.5, -1]
        let y = linear(
            &[1.0, 2.0],
            1,
            &[3.0, 4.0, 5.0, 6.0],
            Some(&[0.5, -1.0]),
            2,
            2,
        );
        assert_eq!(y, vec![11.5, 16.0]);
    }

    #[test]
    fn softmax_rows_sum_to_one_and_argmax_prefers_low_index() {
        let mut x = vec![1.0, 2.0, 3.0, 0.0, 0.0, 0.0];
        softmax_rows(&mut x, 3);
        assert!((x[..3].iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert_eq!(argmax(&[1.0, 3.0, 3.0]), 1);
    }
}
