//! Training the digits models locally with burn autodiff and Adam (to make trained weights
//! for inference jobs; distributed training lives in [`crate::train`]).

use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use gpuchain_jobspec::ModelArch;

use super::burn_io::tensor;
use super::cnn::DigitsCnnConfig;
use super::init::SplitMix64;
use super::mlp::DigitsMlpConfig;
use crate::digits::{Digits, PIXELS};
use crate::params::Params;
use crate::Error;

/// Settings of [`fit_digits`].
#[derive(Config, Debug)]
pub struct FitConfig {
    /// Passes over the training set.
    #[config(default = 10)]
    pub epochs: usize,
    /// Minibatch size.
    #[config(default = 32)]
    pub batch_size: usize,
    /// Adam learning rate.
    #[config(default = 3e-3)]
    pub lr: f64,
    /// Seed for shuffling and the burn initialiser.
    #[config(default = 0)]
    pub seed: u64,
}

/// A shuffled order of `0..n` (Fisher–Yates with splitmix64).
fn shuffled(n: usize, rng: &mut SplitMix64) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        v.swap(i, rng.below(i + 1));
    }
    v
}

/// Trains a digits MLP or CNN on `train` and returns its weights.
pub fn fit_digits<B: AutodiffBackend>(
    arch: ModelArch,
    train: &Digits,
    cfg: &FitConfig,
    device: &B::Device,
) -> crate::Result<Params> {
    B::seed(device, cfg.seed);
    match arch {
        ModelArch::DigitsMlp => {
            let model = DigitsMlpConfig::new().init::<B>(device);
            let model = run(model, train, cfg, device, |m, x| m.forward(x))?;
            Ok(model.to_params())
        }
        ModelArch::DigitsCnn => {
            let model = DigitsCnnConfig::new().init::<B>(device);
            let model = run(model, train, cfg, device, |m, x| m.forward(x))?;
            Ok(model.to_params())
        }
        other => Err(Error::Unsupported {
            arch: other,
            what: "local digits training",
        }),
    }
}

fn run<B: AutodiffBackend, M: burn::module::AutodiffModule<B>>(
    mut model: M,
    train: &Digits,
    cfg: &FitConfig,
    device: &B::Device,
    forward: impl Fn(&M, Tensor<B, 2>) -> Tensor<B, 2>,
) -> crate::Result<M> {
    let mut optim = AdamConfig::new().init::<B, M>();
    let loss_fn = CrossEntropyLossConfig::new().init(device);
    let mut rng = SplitMix64::new(cfg.seed);
    for _ in 0..cfg.epochs {
        for chunk in shuffled(train.len(), &mut rng).chunks(cfg.batch_size.max(1)) {
            let mut x = Vec::with_capacity(chunk.len() * PIXELS);
            for i in chunk {
                x.extend_from_slice(train.image(*i));
            }
            let y: Vec<i64> = chunk.iter().map(|i| i64::from(train.labels[*i])).collect();
            let logits = forward(&model, tensor::<B, 2>(x, [chunk.len(), PIXELS], device)); // [b, 10]
            let targets = Tensor::<B, 1, Int>::from_data(TensorData::new(y, [chunk.len()]), device);
            let loss = loss_fn.forward(logits, targets);
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optim.step(cfg.lr, model, grads);
        }
    }
    Ok(model)
}
