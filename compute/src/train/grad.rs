//! Loss-and-gradient functions: the trait workers train with, and the digits MLP's two
//! (the canonical one and a burn-autodiff one).

use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;

use super::task::Batch;
use crate::models::burn_io::{tensor, transpose, values};
use crate::models::mlp::{DigitsMlp, CLASSES, HIDDEN, INPUT};
use crate::params::Params;
use crate::{Error, Result};

/// Mean cross-entropy loss and its gradient, flat in [`Params::flatten`] order.
pub trait GradFn {
    /// Loss and gradient on a minibatch.
    fn loss_and_grad(&self, p: &Params, batch: &Batch) -> Result<(f32, Vec<f32>)>;
}

/// Mean cross-entropy of `logits` (`[rows, classes]`) against `labels`, with its value
/// and the gradients of everything it was computed from.
pub(crate) fn cross_entropy<B: AutodiffBackend>(
    logits: Tensor<B, 2>,
    labels: impl Iterator<Item = u8>,
    device: &B::Device,
) -> (f32, B::Gradients) {
    let labels: Vec<i64> = labels.map(i64::from).collect();
    let rows = labels.len();
    let targets = Tensor::<B, 1, Int>::from_data(TensorData::new(labels, [rows]), device);
    let loss = burn::nn::loss::CrossEntropyLossConfig::new()
        .init(device)
        .forward(logits, targets);
    let value = values(loss.clone().inner())[0];
    (value, loss.backward())
}

fn digits(batch: &Batch) -> Result<(&[f32], &[u8])> {
    match batch {
        Batch::Digits { x, labels } => Ok((x, labels)),
        Batch::Sentences(_) => Err(Error::Training("the digits MLP trains on images".into())),
    }
}

/// The canonical, deterministic gradient ([`crate::canonical::mlp::loss_and_grad`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct CanonicalGrad;

impl GradFn for CanonicalGrad {
    fn loss_and_grad(&self, p: &Params, batch: &Batch) -> Result<(f32, Vec<f32>)> {
        let (x, labels) = digits(batch)?;
        crate::canonical::mlp::loss_and_grad(p, x, labels)
    }
}

/// The burn autodiff gradient on backend `B`.
#[derive(Clone, Debug)]
pub struct BurnGrad<B: AutodiffBackend> {
    device: B::Device,
}

impl<B: AutodiffBackend> BurnGrad<B> {
    /// A gradient function on `device`.
    pub fn new(device: B::Device) -> Self {
        Self { device }
    }
}

impl<B: AutodiffBackend> GradFn for BurnGrad<B> {
    fn loss_and_grad(&self, p: &Params, batch: &Batch) -> Result<(f32, Vec<f32>)> {
        let (x, labels) = digits(batch)?;
        let model = DigitsMlp::<B>::from_params(p, &self.device)?;
        let rows = labels.len();
        let xb = tensor::<B, 2>(x.to_vec(), [rows, INPUT], &self.device);
        let logits = model.forward(xb); // [rows, 10]
        let (loss_value, grads) = cross_entropy(logits, labels.iter().copied(), &self.device);
        let mut g = Params::default();
        let grad_of = |name: &str| model.grad_by_name(name, &grads);
        g.insert("fc1.bias", vec![HIDDEN], grad_of("fc1.bias"));
        g.insert(
            "fc1.weight",
            vec![HIDDEN, INPUT],
            transpose(&grad_of("fc1.weight"), INPUT, HIDDEN),
        );
        g.insert("fc2.bias", vec![CLASSES], grad_of("fc2.bias"));
        g.insert(
            "fc2.weight",
            vec![CLASSES, HIDDEN],
            transpose(&grad_of("fc2.weight"), HIDDEN, CLASSES),
        );
        Ok((loss_value, g.flatten()))
    }
}
