//! What a training job trains, by model: its examples and split, the weights it starts
//! from, its gradient, and how the coordinator scores it. Workers, the coordinator and the
//! auditor are the same for every model; they reach the model only through [`TrainTask`].

use std::sync::Arc;

use gpuchain_jobspec::{ModelArch, TrainingSpec, WeightsInit};

use super::classifier::{ClassifierGrad, FrozenEncoder};
use super::coordinator::evaluate;
use super::grad::{BurnGrad, CanonicalGrad, GradFn};
use super::sentences::{Example, SentenceDataset};
use crate::blob::BlobStore;
use crate::digits::{Digits, PIXELS};
use crate::models::init::SplitMix64;
use crate::params::Params;
use crate::{Backend, Error, Result};

/// Examples of one kind: a dataset split or a worker's shard of one.
#[derive(Clone, Debug)]
pub enum Examples {
    /// 8×8 digit images.
    Digits(Digits),
    /// Tokenised labelled sentences.
    Sentences(Vec<Example>),
}

impl From<Digits> for Examples {
    fn from(d: Digits) -> Self {
        Examples::Digits(d)
    }
}

/// One minibatch.
#[derive(Clone, Debug)]
pub enum Batch {
    /// Images (`[rows, 64]`, row-major) and their labels.
    Digits {
        /// Pixels.
        x: Vec<f32>,
        /// Labels.
        labels: Vec<u8>,
    },
    /// Sentences.
    Sentences(Vec<Example>),
}

impl Examples {
    /// Number of examples.
    pub fn len(&self) -> usize {
        match self {
            Examples::Digits(d) => d.len(),
            Examples::Sentences(s) => s.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Worker `w` of `k`'s shard: examples with `i % k == w`.
    pub fn shard(&self, w: usize, k: usize) -> Examples {
        match self {
            Examples::Digits(d) => Examples::Digits(d.shard(w, k)),
            Examples::Sentences(s) => Examples::Sentences(
                s.iter()
                    .enumerate()
                    .filter(|(i, _)| i % k.max(1) == w)
                    .map(|(_, e)| e.clone())
                    .collect(),
            ),
        }
    }

    /// `size` examples drawn with replacement by a generator seeded with `seed`.
    pub fn sample(&self, seed: u64, size: usize) -> Batch {
        let mut rng = SplitMix64::new(seed);
        match self {
            Examples::Digits(d) => {
                let (mut x, mut labels) =
                    (Vec::with_capacity(size * PIXELS), Vec::with_capacity(size));
                for _ in 0..size {
                    let i = rng.below(d.len());
                    x.extend_from_slice(d.image(i));
                    labels.push(d.labels[i]);
                }
                Batch::Digits { x, labels }
            }
            Examples::Sentences(s) => {
                Batch::Sentences((0..size).map(|_| s[rng.below(s.len())].clone()).collect())
            }
        }
    }
}

#[derive(Clone)]
enum Model {
    DigitsMlp,
    Classifier(Arc<FrozenEncoder>),
}

/// A training job's model-specific parts, loaded from its spec's blobs.
#[derive(Clone)]
pub struct TrainTask {
    /// The training split (workers shard it).
    pub train: Examples,
    /// The held-out split.
    pub test: Examples,
    /// The first round's trained weights.
    pub init: Params,
    model: Model,
}

impl TrainTask {
    /// The digits MLP on `data`'s fixed split, from `init`.
    pub fn digits(data: &Digits, init: Params) -> Self {
        let (train, test) = data.split();
        Self {
            train: train.into(),
            test: test.into(),
            init,
            model: Model::DigitsMlp,
        }
    }

    /// The task of `spec`, its blobs read from `store`.
    pub fn load(spec: &TrainingSpec, store: &BlobStore) -> Result<Self> {
        let dataset = store.get(&spec.dataset)?;
        match spec.arch {
            ModelArch::DigitsMlp => {
                let init = match &spec.init {
                    WeightsInit::Seed(seed) => crate::models::mlp::init_params(*seed),
                    WeightsInit::Blob(b) => Params::from_safetensors(&store.get(b)?)?,
                };
                Ok(Self::digits(&Digits::parse_gz(&dataset)?, init))
            }
            ModelArch::MiniLmClassifier => {
                let WeightsInit::Blob(b) = &spec.init else {
                    return Err(Error::Training(
                        "the classifier starts from pretrained weights, not a seed".into(),
                    ));
                };
                let base = Params::from_safetensors(&store.get(b)?)?;
                Self::classifier(&base, SentenceDataset::parse(&dataset)?, false)
            }
            other => Err(Error::Training(format!("{other:?} is not trainable"))),
        }
    }

    /// all-MiniLM-L6-v2 (`base`) fine-tuned as a classifier of `data`'s classes: its last
    /// layer and a head trained, or with `head_only` the head alone on the pretrained
    /// encoder (the linear-probe baseline).
    pub fn classifier(base: &Params, data: SentenceDataset, head_only: bool) -> Result<Self> {
        let frozen = FrozenEncoder::load(base)?;
        let init = frozen.initial_weights(data.classes.len(), head_only);
        Ok(Self {
            train: Examples::Sentences(data.train),
            test: Examples::Sentences(data.test),
            init,
            model: Model::Classifier(Arc::new(frozen)),
        })
    }

    /// Worker `w` of `k`'s shard of the training split.
    pub fn shard(&self, w: u32, k: u32) -> Examples {
        self.train.shard(w as usize, k as usize)
    }

    /// The gradient a worker on `backend` computes. The digits MLP has a canonical
    /// gradient; the classifier runs burn's autodiff on the backend (the CPU one for
    /// `canonical`).
    pub fn grad(&self, backend: Backend) -> Arc<dyn GradFn + Send + Sync> {
        match (&self.model, backend) {
            (Model::DigitsMlp, Backend::Canonical) => Arc::new(CanonicalGrad),
            (Model::DigitsMlp, other) => crate::with_burn_backend!(other, |B, device| {
                Arc::new(BurnGrad::<burn::backend::Autodiff<B>>::new(device))
            }),
            (Model::Classifier(frozen), other) => crate::with_burn_backend!(other, |B, device| {
                Arc::new(ClassifierGrad::<burn::backend::Autodiff<B>>::new(
                    frozen.clone(),
                    device,
                ))
            }),
        }
    }

    /// Class scores (`[classes]` each) of a fine-tuning job's trained weights `p` on
    /// `examples`.
    pub fn class_scores(&self, p: &Params, examples: &[Example]) -> Result<Vec<Vec<f32>>> {
        match &self.model {
            Model::Classifier(frozen) => frozen.logits(p, &examples.iter().collect::<Vec<_>>()),
            Model::DigitsMlp => Err(Error::Training("the digits MLP scores images".into())),
        }
    }

    /// Accuracy of trained weights `p` on the held-out split, in 0..=1.
    pub fn evaluate(&self, p: &Params) -> Result<f64> {
        match (&self.model, &self.test) {
            (Model::DigitsMlp, Examples::Digits(d)) => evaluate(p, d),
            (Model::Classifier(frozen), Examples::Sentences(s)) => frozen.accuracy(p, s),
            _ => Err(Error::Training("test split of another model".into())),
        }
    }
}
