//! Decoder building blocks: RMSNorm and rotary position embeddings.

use burn::module::Param;
use burn::prelude::*;

use crate::models::burn_io::tensor;

/// RMSNorm: `x / √(mean(x²) + ε) · weight`.
#[derive(Module, Debug)]
pub struct RmsNorm<B: Backend> {
    weight: Param<Tensor<B, 1>>,
    eps: f32,
}

impl<B: Backend> RmsNorm<B> {
    /// A norm with the given per-channel weight.
    pub(super) fn new(weight: Param<Tensor<B, 1>>, eps: f32) -> Self {
        Self { weight, eps }
    }

    /// `[b, s, h]` → `[b, s, h]`.
    pub(super) fn forward(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        let rms = x
            .clone()
            .powf_scalar(2.0)
            .mean_dim(2)
            .add_scalar(self.eps)
            .sqrt(); // [b, s, 1]
        (x / rms) * self.weight.val().unsqueeze::<3>()
    }
}

/// Angular frequency of each of a head's `d / 2` rotated pairs: `θ^(-2j/d)`, divided by the
/// pair's factor where a checkpoint has them (Llama 3.1's rope scaling) and multiplied by
/// `position_scale` (1 / the factor of linear scaling). Without either it is the plain RoPE
/// frequency, bit for bit.
pub fn rope_frequencies(
    d: usize,
    theta: f32,
    factors: Option<&[f32]>,
    position_scale: f32,
) -> Vec<f32> {
    (0..d / 2)
        .map(|j| {
            let mut freq = 1.0 / theta.powf((2 * j) as f32 / d as f32);
            if let Some(f) = factors.and_then(|f| f.get(j)) {
                freq /= f;
            }
            freq * position_scale
        })
        .collect()
}

/// Rotates `x: [b, heads, s, d]` for positions `start..start+s` (HF "rotate half"), pair `j`
/// at angular frequency `freqs[j]` (see [`rope_frequencies`]).
pub(super) fn rope<B: Backend>(x: Tensor<B, 4>, start: usize, freqs: &[f32]) -> Tensor<B, 4> {
    let [_, _, s, d] = x.dims();
    let device = x.device();
    let half = d / 2;
    let (mut cos, mut sin) = (Vec::with_capacity(s * d), Vec::with_capacity(s * d));
    for pos in start..start + s {
        for j in 0..d {
            let angle = pos as f32 * freqs[j % half];
            cos.push(angle.cos());
            sin.push(angle.sin());
        }
    }
    let cos = tensor::<B, 2>(cos, [s, d], &device).reshape([1, 1, s, d]);
    let sin = tensor::<B, 2>(sin, [s, d], &device).reshape([1, 1, s, d]);
    let x1 = x.clone().narrow(3, 0, half);
    let x2 = x.clone().narrow(3, half, half);
    let rotated = Tensor::cat(vec![x2.neg(), x1], 3);
    x * cos + rotated * sin
}
