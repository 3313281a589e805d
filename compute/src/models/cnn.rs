//! Small digits CNN.
//!
//! `[n,1,8,8]` → conv 3×3 pad 1 (8 ch) → ReLU → max-pool 2 → `[n,8,4,4]` → conv 3×3 pad 1
//! (16 ch) → ReLU → max-pool 2 → `[n,16,2,2]` → flatten (channel, row, column) → `[n,64]` →
//! linear → `[n,10]`. Weights: `conv1.{weight [8,1,3,3], bias}`, `conv2.{weight [16,8,3,3],
//! bias}`, `fc.{weight [10,64], bias}` (1,898 values).

use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{Linear, LinearConfig, PaddingConfig2d};
use burn::prelude::*;
use burn::tensor::activation::relu;

use super::burn_io::{load_conv, load_linear, save_conv, save_linear};
use super::init::{fan_in_uniform, SplitMix64};
use crate::params::Params;

/// Channels after the first convolution.
pub const C1: usize = 8;
/// Channels after the second convolution.
pub const C2: usize = 16;
/// Flattened features before the classifier.
pub const FLAT: usize = C2 * 2 * 2;

/// The CNN's tensors read from [`Params`] by name, each checked against its shape: what the
/// CPU path and the canonical path both run on.
pub struct CnnTensors<'a> {
    /// `conv1.weight` `[C1, 1, 3, 3]` and `conv1.bias` `[C1]`.
    pub conv1: (&'a [f32], &'a [f32]),
    /// `conv2.weight` `[C2, C1, 3, 3]` and `conv2.bias` `[C2]`.
    pub conv2: (&'a [f32], &'a [f32]),
    /// `fc.weight` `[10, FLAT]` and `fc.bias` `[10]`.
    pub fc: (&'a [f32], &'a [f32]),
}

impl<'a> CnnTensors<'a> {
    /// The tensors of `p`, or the first missing or misshapen one's error.
    pub fn get(p: &'a Params) -> crate::Result<Self> {
        Ok(Self {
            conv1: (
                p.get("conv1.weight", &[C1, 1, 3, 3])?,
                p.get("conv1.bias", &[C1])?,
            ),
            conv2: (
                p.get("conv2.weight", &[C2, C1, 3, 3])?,
                p.get("conv2.bias", &[C2])?,
            ),
            fc: (p.get("fc.weight", &[10, FLAT])?, p.get("fc.bias", &[10])?),
        })
    }
}

/// Configuration of the digits CNN.
#[derive(Config, Debug)]
pub struct DigitsCnnConfig {}

/// The digits CNN.
#[derive(Module, Debug)]
pub struct DigitsCnn<B: Backend> {
    conv1: Conv2d<B>,
    conv2: Conv2d<B>,
    pool: MaxPool2d,
    fc: Linear<B>,
}

impl DigitsCnnConfig {
    /// A randomly initialised model.
    pub fn init<B: Backend>(&self, device: &B::Device) -> DigitsCnn<B> {
        let conv = |i, o| {
            Conv2dConfig::new([i, o], [3, 3])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(device)
        };
        DigitsCnn {
            conv1: conv(1, C1),
            conv2: conv(C1, C2),
            pool: MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init(),
            fc: LinearConfig::new(FLAT, 10).init(device),
        }
    }
}

impl<B: Backend> DigitsCnn<B> {
    /// Loads weights from [`Params`].
    pub fn from_params(p: &Params, device: &B::Device) -> crate::Result<Self> {
        let m = DigitsCnnConfig::new().init::<B>(device);
        Ok(Self {
            conv1: load_conv(m.conv1, p, "conv1", device)?,
            conv2: load_conv(m.conv2, p, "conv2", device)?,
            pool: m.pool,
            fc: load_linear(m.fc, p, "fc", FLAT, 10, device)?,
        })
    }

    /// The weights as [`Params`].
    pub fn to_params(&self) -> Params {
        let mut p = Params::default();
        save_conv(&self.conv1, &mut p, "conv1");
        save_conv(&self.conv2, &mut p, "conv2");
        save_linear(&self.fc, &mut p, "fc");
        p
    }

    /// Logits for a batch of 64-pixel rows in 0..=1.
    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let n = x.dims()[0];
        let x = x.reshape([n, 1, 8, 8]); // [n, 64] → [n, 1, 8, 8]
        let x = self.pool.forward(relu(self.conv1.forward(x))); // → [n, 8, 4, 4]
        let x = self.pool.forward(relu(self.conv2.forward(x))); // → [n, 16, 2, 2]
        self.fc.forward(x.reshape([n, FLAT])) // → [n, 64] → [n, 10]
    }
}

/// Seeded initial weights (uniform ±1/√fan_in).
pub fn init_params(seed: u64) -> Params {
    let mut rng = SplitMix64::new(seed);
    let mut p = Params::default();
    p.insert(
        "conv1.weight",
        vec![C1, 1, 3, 3],
        fan_in_uniform(&mut rng, C1 * 9, 9),
    );
    p.insert("conv1.bias", vec![C1], fan_in_uniform(&mut rng, C1, 9));
    p.insert(
        "conv2.weight",
        vec![C2, C1, 3, 3],
        fan_in_uniform(&mut rng, C2 * C1 * 9, C1 * 9),
    );
    p.insert("conv2.bias", vec![C2], fan_in_uniform(&mut rng, C2, C1 * 9));
    p.insert(
        "fc.weight",
        vec![10, FLAT],
        fan_in_uniform(&mut rng, 10 * FLAT, FLAT),
    );
    p.insert("fc.bias", vec![10], fan_in_uniform(&mut rng, 10, FLAT));
    p
}
