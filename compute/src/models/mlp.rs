//! Digits MLP: 64 → 128 (ReLU) → 10 logits.
//!
//! Weights: `fc1.weight [128, 64]`, `fc1.bias [128]`, `fc2.weight [10, 128]`, `fc2.bias [10]`
//! (9,610 values).

use burn::nn::{Linear, LinearConfig};
use burn::prelude::*;
use burn::tensor::activation::relu;

use super::burn_io::{load_linear, save_linear};
use super::init::{fan_in_uniform, SplitMix64};
use crate::params::Params;

/// Input width (8×8 pixels).
pub const INPUT: usize = 64;
/// Hidden width.
pub const HIDDEN: usize = 128;
/// Classes.
pub const CLASSES: usize = 10;

/// Configuration of the digits MLP.
#[derive(Config, Debug)]
pub struct DigitsMlpConfig {
    /// Hidden width.
    #[config(default = 128)]
    pub hidden: usize,
}

/// The digits MLP.
#[derive(Module, Debug)]
pub struct DigitsMlp<B: Backend> {
    fc1: Linear<B>,
    fc2: Linear<B>,
}

impl DigitsMlpConfig {
    /// A randomly initialised model.
    pub fn init<B: Backend>(&self, device: &B::Device) -> DigitsMlp<B> {
        DigitsMlp {
            fc1: LinearConfig::new(INPUT, self.hidden).init(device),
            fc2: LinearConfig::new(self.hidden, CLASSES).init(device),
        }
    }
}

impl<B: Backend> DigitsMlp<B> {
    /// Loads weights from [`Params`].
    pub fn from_params(p: &Params, device: &B::Device) -> crate::Result<Self> {
        let m = DigitsMlpConfig::new().init::<B>(device);
        Ok(Self {
            fc1: load_linear(m.fc1, p, "fc1", INPUT, HIDDEN, device)?,
            fc2: load_linear(m.fc2, p, "fc2", HIDDEN, CLASSES, device)?,
        })
    }

    /// The weights as [`Params`].
    pub fn to_params(&self) -> Params {
        let mut p = Params::default();
        save_linear(&self.fc1, &mut p, "fc1");
        save_linear(&self.fc2, &mut p, "fc2");
        p
    }

    /// Logits for a batch of pixel rows in 0..=1.
    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let h = relu(self.fc1.forward(x)); // [n, 64] → [n, 128]
        self.fc2.forward(h) // [n, 128] → [n, 10]
    }
}

impl<B: burn::tensor::backend::AutodiffBackend> DigitsMlp<B> {
    /// The gradient of `name` (`fc1.weight`, …) in burn's layout, flat; zeros when absent.
    pub fn grad_by_name(&self, name: &str, grads: &B::Gradients) -> Vec<f32> {
        let layer = if name.starts_with("fc1") {
            &self.fc1
        } else {
            &self.fc2
        };
        let g = if name.ends_with("weight") {
            layer.weight.grad(grads).map(|t| t.into_data())
        } else {
            layer
                .bias
                .as_ref()
                .and_then(|b| b.grad(grads))
                .map(|t| t.into_data())
        };
        g.and_then(|d| d.convert::<f32>().to_vec::<f32>().ok())
            .unwrap_or_default()
    }
}

/// Seeded initial weights (uniform ±1/√fan_in), identical on every platform.
pub fn init_params(seed: u64) -> Params {
    let mut rng = SplitMix64::new(seed);
    let mut p = Params::default();
    p.insert(
        "fc1.weight",
        vec![HIDDEN, INPUT],
        fan_in_uniform(&mut rng, HIDDEN * INPUT, INPUT),
    );
    p.insert(
        "fc1.bias",
        vec![HIDDEN],
        fan_in_uniform(&mut rng, HIDDEN, INPUT),
    );
    p.insert(
        "fc2.weight",
        vec![CLASSES, HIDDEN],
        fan_in_uniform(&mut rng, CLASSES * HIDDEN, HIDDEN),
    );
    p.insert(
        "fc2.bias",
        vec![CLASSES],
        fan_in_uniform(&mut rng, CLASSES, HIDDEN),
    );
    p
}
