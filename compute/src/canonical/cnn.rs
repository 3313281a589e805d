//! Canonical digits CNN forward pass (layout in [`crate::models::cnn`]).

use super::math::{linear, relu};
use crate::models::cnn::{CnnTensors, C1, C2, FLAT};
use crate::params::Params;
use crate::Result;

/// 3×3 convolution, stride 1, zero padding 1, on one image `[c_in, h, w]`. Each output sums
/// over input channel, kernel row, kernel column (all ascending) from 0.0, then adds the bias.
fn conv3x3(
    x: &[f32],
    c_in: usize,
    h: usize,
    w: usize,
    weight: &[f32],
    bias: &[f32],
    c_out: usize,
) -> Vec<f32> {
    let mut y = vec![0.0f32; c_out * h * w];
    for co in 0..c_out {
        for oy in 0..h {
            for ox in 0..w {
                let mut acc = 0.0f32;
                for ci in 0..c_in {
                    for ky in 0..3 {
                        for kx in 0..3 {
                            let (iy, ix) = (oy + ky, ox + kx);
                            if iy < 1 || ix < 1 || iy > h || ix > w {
                                continue;
                            }
                            let v = x[ci * h * w + (iy - 1) * w + (ix - 1)];
                            acc += v * weight[((co * c_in + ci) * 3 + ky) * 3 + kx];
                        }
                    }
                }
                y[co * h * w + oy * w + ox] = acc + bias[co];
            }
        }
    }
    y
}

/// 2×2 max-pool, stride 2, on `[c, h, w]`.
fn maxpool2(x: &[f32], c: usize, h: usize, w: usize) -> Vec<f32> {
    let (oh, ow) = (h / 2, w / 2);
    let mut y = vec![0.0f32; c * oh * ow];
    for ch in 0..c {
        for oy in 0..oh {
            for ox in 0..ow {
                let at = |dy: usize, dx: usize| x[ch * h * w + (2 * oy + dy) * w + 2 * ox + dx];
                y[ch * oh * ow + oy * ow + ox] = at(0, 0).max(at(0, 1)).max(at(1, 0)).max(at(1, 1));
            }
        }
    }
    y
}

/// Logits `[rows, 10]` for `rows` pixel rows of 64 values.
pub fn forward(p: &Params, x: &[f32], rows: usize) -> Result<Vec<f32>> {
    let CnnTensors {
        conv1: (w1, b1),
        conv2: (w2, b2),
        fc: (wf, bf),
    } = CnnTensors::get(p)?;
    let mut flat = Vec::with_capacity(rows * FLAT);
    for r in 0..rows {
        let mut a = conv3x3(&x[r * 64..(r + 1) * 64], 1, 8, 8, w1, b1, C1);
        relu(&mut a);
        let a = maxpool2(&a, C1, 8, 8);
        let mut b = conv3x3(&a, C1, 4, 4, w2, b2, C2);
        relu(&mut b);
        flat.extend(maxpool2(&b, C2, 4, 4));
    }
    Ok(linear(&flat, rows, wf, Some(bf), FLAT, 10))
}
