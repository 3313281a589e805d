//! The digits CNN of [`super::cnn`] on the CPU without burn: each convolution as one matrix
//! product over its unfolded 3×3 patches (`gpuchain_kernels::matmul`), activations kept
//! channels-last, ReLU and max-pooling fused, batches on rayon's threads. The CPU backend's
//! inference runs it; burn's model trains and runs on a GPU, the canonical path stays the
//! reference.

use gpuchain_kernels::{self as kernels, Mat, MatMut};
use rayon::prelude::*;

use super::cnn::{CnnTensors, C1, C2, FLAT};
use crate::params::Params;
use crate::Result;

/// Unfolds `[n, side, side, ch]` activations into `[n·side², 9·ch]` 3×3 patches (padding 1),
/// column `c·9 + ky·3 + kx`, the order of a `[out, ch, 3, 3]` weight's rows.
fn patches(x: &[f32], n: usize, side: usize, ch: usize) -> Vec<f32> {
    let k = 9 * ch;
    let mut out = vec![0.0f32; n * side * side * k];
    for (p, row) in out.chunks_exact_mut(k).enumerate() {
        let (i, y, xx) = (p / (side * side), p / side % side, p % side);
        for ky in 0..3 {
            for kx in 0..3 {
                let (sy, sx) = ((y + ky).wrapping_sub(1), (xx + kx).wrapping_sub(1));
                if sy >= side || sx >= side {
                    continue;
                }
                let at = ((i * side + sy) * side + sx) * ch;
                for (c, v) in x[at..at + ch].iter().enumerate() {
                    row[c * 9 + ky * 3 + kx] = *v;
                }
            }
        }
    }
    out
}

/// `x · Wᵀ + b` for `rows` rows of `x`, `w` being `[out, d_in]`.
fn dense(x: &[f32], rows: usize, w: &[f32], b: &[f32]) -> Vec<f32> {
    let (d_out, d_in) = (b.len(), w.len() / b.len().max(1));
    let mut y = b.repeat(rows);
    kernels::matmul(
        MatMut::new(&mut y, rows, d_out),
        Mat::new(x, rows, d_in),
        Mat::new(w, d_out, d_in).t(),
        1.0,
        true,
        1,
    );
    y
}

/// ReLU then 2×2 max-pooling of `[n, side, side, ch]`: `[n, side/2, side/2, ch]`.
fn relu_pool(x: &[f32], n: usize, side: usize, ch: usize) -> Vec<f32> {
    let half = side / 2;
    let mut out = vec![0.0f32; n * half * half * ch];
    for (p, cell) in out.chunks_exact_mut(ch).enumerate() {
        let (i, y, xx) = (p / (half * half), p / half % half, p % half);
        for (dy, dx) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
            let at = ((i * side + 2 * y + dy) * side + 2 * xx + dx) * ch;
            for (o, v) in cell.iter_mut().zip(&x[at..at + ch]) {
                *o = o.max(*v);
            }
        }
    }
    out
}

/// Logits `[rows, 10]` of 64-pixel rows in 0..=1, `batch` images a task.
pub fn logits(p: &Params, x: &[f32], rows: usize, batch: usize) -> Result<Vec<f32>> {
    let CnnTensors {
        conv1: (w1, b1),
        conv2: (w2, b2),
        fc: (wf, bf),
    } = CnnTensors::get(p)?;
    let chunks: Vec<Vec<f32>> = x[..rows * 64]
        .par_chunks(batch.max(1) * 64)
        .map(|images| {
            let n = images.len() / 64;
            let h1 = dense(&patches(images, n, 8, 1), n * 64, w1, b1); // [n, 8, 8, C1]
            let p1 = relu_pool(&h1, n, 8, C1); // [n, 4, 4, C1]
            let h2 = dense(&patches(&p1, n, 4, C1), n * 16, w2, b2); // [n, 4, 4, C2]
            let p2 = relu_pool(&h2, n, 4, C2); // [n, 2, 2, C2]
                                               // The classifier reads features channel-first, as burn's flatten of [n, C2, 2, 2].
            let flat: Vec<f32> = p2
                .chunks_exact(FLAT)
                .flat_map(|img| (0..FLAT).map(move |f| img[(f % 4) * C2 + f / 4]))
                .collect();
            dense(&flat, n, wf, bf)
        })
        .collect();
    Ok(chunks.concat())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::cnn::init_params;

    #[test]
    fn logits_equal_the_canonical_networks() {
        let p = init_params(7);
        let rows = 37;
        let x: Vec<f32> = (0..rows * 64)
            .map(|i| ((i * 37 % 17) as f32) / 16.0)
            .collect();
        let want = crate::canonical::cnn::forward(&p, &x, rows).unwrap();
        for batch in [1, 5, 64] {
            let got = logits(&p, &x, rows, batch).unwrap();
            assert_eq!(got.len(), want.len());
            for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                assert!((a - b).abs() < 1e-4, "batch {batch}, logit {i}: {a} vs {b}");
            }
        }
    }
}
