//! Canonical digits MLP: forward pass and one SGD training step.

use super::math::{linear, relu, softmax_rows};
use crate::models::mlp::{CLASSES, HIDDEN, INPUT};
use crate::params::Params;
use crate::Result;

/// The MLP's weights, borrowed and shape-checked.
struct Weights<'a> {
    w1: &'a [f32],
    b1: &'a [f32],
    w2: &'a [f32],
    b2: &'a [f32],
}

fn weights(p: &Params) -> Result<Weights<'_>> {
    Ok(Weights {
        w1: p.get("fc1.weight", &[HIDDEN, INPUT])?,
        b1: p.get("fc1.bias", &[HIDDEN])?,
        w2: p.get("fc2.weight", &[CLASSES, HIDDEN])?,
        b2: p.get("fc2.bias", &[CLASSES])?,
    })
}

/// Logits `[rows, 10]` for `rows` pixel rows of 64 values.
pub fn forward(p: &Params, x: &[f32], rows: usize) -> Result<Vec<f32>> {
    let w = weights(p)?;
    let mut h = linear(x, rows, w.w1, Some(w.b1), INPUT, HIDDEN);
    relu(&mut h);
    Ok(linear(&h, rows, w.w2, Some(w.b2), HIDDEN, CLASSES))
}

/// Mean cross-entropy loss and its gradient, in the flat name order of [`Params`]
/// (`fc1.bias`, `fc1.weight`, `fc2.bias`, `fc2.weight`).
pub fn loss_and_grad(p: &Params, x: &[f32], labels: &[u8]) -> Result<(f32, Vec<f32>)> {
    let w = weights(p)?;
    let rows = labels.len();
    let mut h_pre = linear(x, rows, w.w1, Some(w.b1), INPUT, HIDDEN);
    let mut h = h_pre.clone();
    relu(&mut h);
    let mut prob = linear(&h, rows, w.w2, Some(w.b2), HIDDEN, CLASSES);
    softmax_rows(&mut prob, CLASSES);
    let scale = 1.0 / rows as f32;
    let mut loss = 0.0f32;
    // d logits = (p − onehot) / rows
    let mut dz = prob;
    for r in 0..rows {
        let y = usize::from(labels[r]);
        loss -= libm::logf(dz[r * CLASSES + y].max(1e-30));
        dz[r * CLASSES + y] -= 1.0;
        for v in &mut dz[r * CLASSES..(r + 1) * CLASSES] {
            *v *= scale;
        }
    }
    loss *= scale;
    let (mut gw2, mut gb2) = (vec![0.0f32; CLASSES * HIDDEN], vec![0.0f32; CLASSES]);
    let mut dh = vec![0.0f32; rows * HIDDEN];
    for r in 0..rows {
        for o in 0..CLASSES {
            let g = dz[r * CLASSES + o];
            gb2[o] += g;
            for i in 0..HIDDEN {
                gw2[o * HIDDEN + i] += g * h[r * HIDDEN + i];
            }
        }
        for i in 0..HIDDEN {
            let mut acc = 0.0f32;
            for o in 0..CLASSES {
                acc += dz[r * CLASSES + o] * w.w2[o * HIDDEN + i];
            }
            dh[r * HIDDEN + i] = if h_pre[r * HIDDEN + i] > 0.0 {
                acc
            } else {
                0.0
            };
        }
    }
    h_pre.clear();
    let (mut gw1, mut gb1) = (vec![0.0f32; HIDDEN * INPUT], vec![0.0f32; HIDDEN]);
    for r in 0..rows {
        for o in 0..HIDDEN {
            let g = dh[r * HIDDEN + o];
            if g == 0.0 {
                continue;
            }
            gb1[o] += g;
            for i in 0..INPUT {
                gw1[o * INPUT + i] += g * x[r * INPUT + i];
            }
        }
    }
    let mut grad = gb1;
    grad.extend(gw1);
    grad.extend(gb2);
    grad.extend(gw2);
    Ok((loss, grad))
}

/// One SGD step with heavy-ball momentum on a minibatch: `v ← μ·v + g; w ← w − lr·v`.
/// `velocity` is in the flat order of [`Params::flatten`]. Returns the minibatch loss.
pub fn sgd_step(
    p: &mut Params,
    velocity: &mut [f32],
    x: &[f32],
    labels: &[u8],
    lr: f32,
    momentum: f32,
) -> Result<f32> {
    let (loss, grad) = loss_and_grad(p, x, labels)?;
    let mut flat = p.flatten();
    for i in 0..flat.len() {
        velocity[i] = momentum * velocity[i] + grad[i];
        flat[i] -= lr * velocity[i];
    }
    p.unflatten(&flat)?;
    Ok(loss)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::mlp::init_params;

    #[test]
    fn gradient_matches_finite_differences() {
        let p = init_params(3);
        let x: Vec<f32> = (0..2 * INPUT)
            .map(|i| ((i * 7) % 17) as f32 / 16.0)
            .collect();
        let labels = [3u8, 7];
        let (_, grad) = loss_and_grad(&p, &x, &labels).unwrap();
        let flat = p.flatten();
        for idx in [0usize, 5, 130, 9000, 9605] {
            let mut plus = p.clone();
            let mut minus = p.clone();
            let mut f = flat.clone();
            f[idx] += 1e-2;
            plus.unflatten(&f).unwrap();
            f[idx] -= 2e-2;
            minus.unflatten(&f).unwrap();
            let lp = loss_and_grad(&plus, &x, &labels).unwrap().0;
            let lm = loss_and_grad(&minus, &x, &labels).unwrap().0;
            let numeric = (lp - lm) / 2e-2;
            assert!(
                (numeric - grad[idx]).abs() < 2e-3,
                "index {idx}: numeric {numeric}, analytic {}",
                grad[idx]
            );
        }
    }
}
