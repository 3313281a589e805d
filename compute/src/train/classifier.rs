//! Fine-tuning all-MiniLM-L6-v2 as a sentence classifier.
//!
//! The pretrained encoder's last layer and a linear head over its mean-pooled token states
//! are trained; the embeddings and the layers below stay frozen. A frozen part's output
//! never changes during a job, so each process computes a sentence's states under the last
//! layer once (on the CPU encoder) and keeps them; a training step then runs, and
//! back-propagates through, one encoder layer and the head only. The trained weights are
//! the last layer's tensors, under their HuggingFace names, and `classifier.weight`
//! (`[classes, hidden]`) and `classifier.bias`: the pretrained model with those tensors
//! replaced, plus the head, is the fine-tuned classifier.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use burn::prelude::*;
use burn::tensor::activation::{gelu, softmax};
use burn::tensor::backend::AutodiffBackend;
use gpuchain_jobspec::{BlobRef, ModelArch, TrainingSpec, ValueBits, WeightsInit};

use super::grad::{cross_entropy, GradFn};
use super::sentences::Example;
use super::task::Batch;
use crate::embed::{BertConfig, CpuEncoder};
use crate::models::burn_io::values;
use crate::params::Params;
use crate::{Error, Result};

/// Name prefix of the head's tensors.
pub const HEAD: &str = "classifier";

/// The fine-tuning job the demo, the tests and the benchmarks run on `weights` (the
/// pretrained model) and `dataset`: 3 workers, 6 rounds of 4 local steps of 16 sentences,
/// SGD with momentum 0.9 at lr 0.05, top-1 % updates with error feedback and DGC's
/// momentum masking, 16-bit values, no coordinator (set one to run it over providers).
pub fn sentiment_spec(weights: BlobRef, dataset: BlobRef) -> TrainingSpec {
    TrainingSpec {
        arch: ModelArch::MiniLmClassifier,
        init: WeightsInit::Blob(weights),
        dataset,
        workers: 3,
        rounds: 6,
        local_steps: 4,
        batch_size: 16,
        lr_ppm: 50_000,
        momentum_ppm: 900_000,
        topk_ppm: 10_000,
        value_bits: ValueBits::B16,
        error_feedback: true,
        momentum_correction: true,
        warmup_rounds: 0,
        seed: 21,
        tolerance: None,
        coordinator_url: None,
    }
}

/// The fine-tuned classifier as one weights file: `base` (all-MiniLM-L6-v2) with the
/// tensors a fine-tuning job trained (its result) put in place of the pretrained ones, the
/// head included. An inference job of arch `mini_lm_classifier` runs it.
pub fn fine_tuned(base: &Params, trained: &Params) -> Params {
    let mut out = base.clone();
    for (name, t) in &trained.tensors {
        out.insert(name.clone(), t.dims.clone(), t.data.clone());
    }
    out
}

/// Runs a classification job: the input is a JSON array of sentences, tokenised with the
/// job's tokenizer; the weights are a fine-tuned classifier ([`fine_tuned`]); the output is
/// `[sentences, classes]` class scores. Every backend runs the same path (the CPU encoder
/// and burn's CPU backend for the last layer), so replicas and verifiers agree to the bit
/// on one machine and within rounding across machines.
pub fn run_job(
    s: &gpuchain_jobspec::InferenceSpec,
    store: &crate::blob::BlobStore,
) -> Result<crate::JobOutput> {
    let sentences = crate::embed::decode_sentences(&store.get(&s.input)?)?;
    let tokenizer = s
        .tokenizer
        .as_ref()
        .ok_or_else(|| Error::BadInput("classifier jobs need a tokenizer blob".into()))?;
    let tokenizer = crate::embed::SentenceTokenizer::from_bytes(&store.get(tokenizer)?)?;
    let weights = Params::from_safetensors(&store.get(&s.weights)?)?;
    let mut head = Params::default();
    for (name, t) in weights.tensors.range(format!("{HEAD}.")..) {
        if !name.starts_with(&format!("{HEAD}.")) {
            break;
        }
        head.insert(name.clone(), t.dims.clone(), t.data.clone());
    }
    let classes = head
        .tensors
        .get(&format!("{HEAD}.bias"))
        .map(|t| t.data.len())
        .ok_or_else(|| {
            Error::BadWeights(format!("no `{HEAD}.bias`: not a fine-tuned classifier"))
        })?;
    let hidden = BertConfig::new().hidden;
    head.get(&format!("{HEAD}.weight"), &[classes, hidden])?;
    let encoder = FrozenEncoder::load(&weights)?;
    let examples: Vec<Example> = tokenizer
        .encode_all(&sentences)?
        .into_iter()
        .map(|ids| Example { ids, label: 0 })
        .collect();
    let mut scores = Vec::with_capacity(examples.len() * classes);
    for chunk in examples.chunks(s.batch_size.max(1) as usize) {
        let refs: Vec<&Example> = chunk.iter().collect();
        scores.extend(encoder.logits(&head, &refs)?.into_iter().flatten());
        // A job's sentences are read once: keeping their states would only grow memory.
        encoder.lock().clear();
    }
    Ok(crate::JobOutput::new(
        gpuchain_jobspec::JobKind::Logits,
        crate::tensor_io::encode_f32(&[sentences.len(), classes], &scores),
        None,
    ))
}

/// Sentences whose frozen states are computed together.
const FROZEN_BATCH: usize = 32;

/// The tensors of encoder layer `layer` (HuggingFace names) and their shapes.
fn layer_tensors(cfg: &BertConfig, layer: usize) -> Vec<(String, Vec<usize>)> {
    let (h, i) = (cfg.hidden, cfg.intermediate);
    let pre = format!("encoder.layer.{layer}");
    let mut out = Vec::new();
    let mut linear = |name: &str, d_in: usize, d_out: usize| {
        out.push((format!("{pre}.{name}.weight"), vec![d_out, d_in]));
        out.push((format!("{pre}.{name}.bias"), vec![d_out]));
    };
    for n in ["query", "key", "value"] {
        linear(&format!("attention.self.{n}"), h, h);
    }
    linear("attention.output.dense", h, h);
    linear("intermediate.dense", h, i);
    linear("output.dense", i, h);
    for n in ["attention.output.LayerNorm", "output.LayerNorm"] {
        out.push((format!("{pre}.{n}.weight"), vec![h]));
        out.push((format!("{pre}.{n}.bias"), vec![h]));
    }
    out
}

/// The pretrained encoder below its last layer, with the states it has computed.
pub struct FrozenEncoder {
    encoder: CpuEncoder,
    cfg: BertConfig,
    top: usize,
    /// The pretrained last layer, used where the trained weights do not replace it.
    top_weights: Params,
    states: Mutex<BTreeMap<Vec<u32>, Arc<Vec<f32>>>>,
}

impl FrozenEncoder {
    /// The frozen part of `base` (all-MiniLM-L6-v2's tensors).
    pub fn load(base: &Params) -> Result<Self> {
        let cfg = BertConfig::new();
        let encoder = CpuEncoder::load(base, &cfg)?;
        let top = encoder
            .layer_count()
            .checked_sub(1)
            .ok_or_else(|| Error::BadWeights("an encoder with no layers".into()))?;
        let mut top_weights = Params::default();
        for (name, dims) in layer_tensors(&cfg, top) {
            top_weights.insert(name.clone(), dims.clone(), base.get(&name, &dims)?.to_vec());
        }
        Ok(Self {
            encoder,
            cfg,
            top,
            top_weights,
            states: Mutex::new(BTreeMap::new()),
        })
    }

    /// The starting point of a fine-tuning job with `classes` classes: the pretrained last
    /// layer and a zero head; with `head_only`, the head alone (the encoder stays as it
    /// was pretrained: a linear probe, the baseline fine-tuning is measured against).
    pub fn initial_weights(&self, classes: usize, head_only: bool) -> Params {
        let mut p = if head_only {
            Params::default()
        } else {
            self.top_weights.clone()
        };
        let h = self.cfg.hidden;
        p.insert(
            format!("{HEAD}.weight"),
            vec![classes, h],
            vec![0.0; classes * h],
        );
        p.insert(format!("{HEAD}.bias"), vec![classes], vec![0.0; classes]);
        p
    }

    /// Each example's token states under the last layer (`[tokens, hidden]`), computed
    /// once per distinct sentence.
    pub fn states(&self, examples: &[&Example]) -> Result<Vec<Arc<Vec<f32>>>> {
        let missing: Vec<&[u32]> = {
            let known = self.lock();
            let mut seen = std::collections::BTreeSet::new();
            examples
                .iter()
                .map(|e| e.ids.as_slice())
                .filter(|ids| !known.contains_key(*ids) && seen.insert(*ids))
                .collect()
        };
        for chunk in missing.chunks(FROZEN_BATCH) {
            let (x, spans) = self.encoder.states(chunk, self.top)?;
            let h = self.cfg.hidden;
            let mut known = self.lock();
            for (ids, (start, n)) in chunk.iter().zip(spans) {
                known.insert(
                    ids.to_vec(),
                    Arc::new(x[start * h..(start + n) * h].to_vec()),
                );
            }
        }
        let known = self.lock();
        examples
            .iter()
            .map(|e| {
                known
                    .get(&e.ids)
                    .cloned()
                    .ok_or_else(|| Error::Training("frozen states went missing".into()))
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Vec<u32>, Arc<Vec<f32>>>> {
        self.states.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Class scores `[examples, classes]` of the trained weights `p`, on the CPU.
    pub fn logits(&self, p: &Params, examples: &[&Example]) -> Result<Vec<Vec<f32>>> {
        type B = crate::backend::CpuBackend;
        self.check(p)?;
        let device = Default::default();
        let mut out = Vec::with_capacity(examples.len());
        let w = self.weights::<B>(p, &device, false);
        for chunk in examples.chunks(64) {
            let states = self.states(chunk)?;
            let logits = self.forward::<B>(&w, &states, &device)?;
            let classes = logits.dims()[1];
            out.extend(values(logits).chunks(classes).map(<[f32]>::to_vec));
        }
        Ok(out)
    }

    /// Share of `examples` whose highest class score is their label.
    pub fn accuracy(&self, p: &Params, examples: &[Example]) -> Result<f64> {
        let refs: Vec<&Example> = examples.iter().collect();
        let logits = self.logits(p, &refs)?;
        let right = logits
            .iter()
            .zip(examples)
            .filter(|(l, e)| crate::canonical::math::argmax(l) == usize::from(e.label))
            .count();
        Ok(right as f64 / examples.len().max(1) as f64)
    }

    /// Checks that `p` holds only tensors of the trained layer and the head, each of its
    /// shape, so that weights from another party are refused with a reason rather than
    /// reshaped wrongly.
    fn check(&self, p: &Params) -> Result<()> {
        let classes = p
            .tensors
            .get(&format!("{HEAD}.bias"))
            .map(|t| t.data.len())
            .ok_or_else(|| Error::BadWeights(format!("no `{HEAD}.bias`")))?;
        if !(2..=super::sentences::MAX_CLASSES).contains(&classes) {
            return Err(Error::BadWeights(format!("a head of {classes} classes")));
        }
        for (name, t) in &p.tensors {
            let want = if name == &format!("{HEAD}.weight") {
                vec![classes, self.cfg.hidden]
            } else if name == &format!("{HEAD}.bias") {
                vec![classes]
            } else {
                self.top_weights
                    .tensors
                    .get(name)
                    .map(|w| w.dims.clone())
                    .ok_or_else(|| Error::BadWeights(format!("`{name}` is not trained here")))?
            };
            if t.dims != want || t.data.len() != want.iter().product::<usize>() {
                return Err(Error::BadWeights(format!(
                    "`{name}` has shape {:?}, expected {want:?}",
                    t.dims
                )));
            }
        }
        if !p.tensors.contains_key(&format!("{HEAD}.weight")) {
            return Err(Error::BadWeights(format!("no `{HEAD}.weight`")));
        }
        Ok(())
    }

    /// The last layer and the head over a padded batch of frozen states.
    fn forward<B: Backend>(
        &self,
        w: &BTreeMap<String, Tensor<B, 1>>,
        states: &[Arc<Vec<f32>>],
        device: &B::Device,
    ) -> Result<Tensor<B, 2>> {
        let (h, i, heads) = (self.cfg.hidden, self.cfg.intermediate, self.cfg.heads);
        let dh = h / heads;
        let b = states.len();
        let s = states.iter().map(|x| x.len() / h).max().unwrap_or(1).max(1);
        let mut x = vec![0.0f32; b * s * h];
        let mut mask = vec![0.0f32; b * s];
        for (r, st) in states.iter().enumerate() {
            x[r * s * h..r * s * h + st.len()].copy_from_slice(st);
            mask[r * s..r * s + st.len() / h].fill(1.0);
        }
        let x = Tensor::<B, 2>::from_data(TensorData::new(x, [b * s, h]), device);
        let mask = Tensor::<B, 2>::from_data(TensorData::new(mask, [b, s]), device);
        let pre = format!("encoder.layer.{}", self.top);
        let get = |name: &str| {
            w.get(name)
                .cloned()
                .ok_or_else(|| Error::BadWeights(format!("missing tensor `{name}`")))
        };
        let linear = |x: Tensor<B, 2>, name: &str, d_in: usize, d_out: usize| -> Result<_> {
            let weight = get(&format!("{name}.weight"))?.reshape([d_out, d_in]);
            let bias = get(&format!("{name}.bias"))?.reshape([1, d_out]);
            Ok(x.matmul(weight.transpose()) + bias)
        };
        let norm = |x: Tensor<B, 2>, name: &str| -> Result<_> {
            let gamma = get(&format!("{name}.weight"))?.reshape([1, h]);
            let beta = get(&format!("{name}.bias"))?.reshape([1, h]);
            let centred = x.clone() - x.mean_dim(1);
            let var = centred.clone().powi_scalar(2).mean_dim(1);
            Ok(centred / (var + self.cfg.eps).sqrt() * gamma + beta)
        };
        let split = |t: Tensor<B, 2>| t.reshape([b, s, heads, dh]).swap_dims(1, 2);
        let attn = |n: &str| format!("{pre}.attention.self.{n}");
        let q = split(linear(x.clone(), &attn("query"), h, h)?);
        let k = split(linear(x.clone(), &attn("key"), h, h)?);
        let v = split(linear(x.clone(), &attn("value"), h, h)?);
        let mask_add = (mask.clone() - 1.0).mul_scalar(1e9).reshape([b, 1, 1, s]);
        let scores = q.matmul(k.swap_dims(2, 3)).div_scalar((dh as f32).sqrt()) + mask_add;
        let ctx = softmax(scores, 3)
            .matmul(v)
            .swap_dims(1, 2)
            .reshape([b * s, h]);
        let a = linear(ctx, &format!("{pre}.attention.output.dense"), h, h)? + x;
        let a = norm(a, &format!("{pre}.attention.output.LayerNorm"))?;
        let f = gelu(linear(
            a.clone(),
            &format!("{pre}.intermediate.dense"),
            h,
            i,
        )?);
        let o = linear(f, &format!("{pre}.output.dense"), i, h)? + a;
        let o = norm(o, &format!("{pre}.output.LayerNorm"))?;
        let summed = (o.reshape([b, s, h]) * mask.clone().reshape([b, s, 1]))
            .sum_dim(1)
            .reshape([b, h]);
        let pooled = summed / mask.sum_dim(1).clamp_min(1.0);
        let classes = w
            .get(&format!("{HEAD}.bias"))
            .map(|t| t.dims()[0])
            .unwrap_or(0);
        linear(pooled, HEAD, h, classes)
    }
}

fn flat<B: Backend>(data: &[f32], device: &B::Device) -> Tensor<B, 1> {
    Tensor::from_data(TensorData::new(data.to_vec(), [data.len()]), device)
}

impl FrozenEncoder {
    /// `p`'s tensors as flat burn tensors by name, tracked for gradients when `track`, and
    /// the pretrained last layer's where `p` has none.
    fn weights<B: Backend>(
        &self,
        p: &Params,
        device: &B::Device,
        track: bool,
    ) -> BTreeMap<String, Tensor<B, 1>> {
        let mut w: BTreeMap<String, Tensor<B, 1>> = p
            .tensors
            .iter()
            .map(|(name, t)| {
                let x = flat::<B>(&t.data, device);
                (name.clone(), if track { x.require_grad() } else { x })
            })
            .collect();
        for (name, t) in &self.top_weights.tensors {
            if !w.contains_key(name) {
                w.insert(name.clone(), flat::<B>(&t.data, device));
            }
        }
        w
    }
}

/// Cross-entropy loss and gradient of the classifier, with burn's autodiff on backend `B`.
pub struct ClassifierGrad<B: AutodiffBackend> {
    frozen: Arc<FrozenEncoder>,
    device: B::Device,
}

impl<B: AutodiffBackend> ClassifierGrad<B> {
    /// A gradient function over `frozen`'s states on `device`.
    pub fn new(frozen: Arc<FrozenEncoder>, device: B::Device) -> Self {
        Self { frozen, device }
    }
}

impl<B: AutodiffBackend> GradFn for ClassifierGrad<B> {
    fn loss_and_grad(&self, p: &Params, batch: &Batch) -> Result<(f32, Vec<f32>)> {
        let Batch::Sentences(examples) = batch else {
            return Err(Error::Training(
                "the sentence classifier trains on sentences".into(),
            ));
        };
        self.frozen.check(p)?;
        let states = self.frozen.states(&examples.iter().collect::<Vec<_>>())?;
        let w = self.frozen.weights::<B>(p, &self.device, true);
        let logits = self.frozen.forward::<B>(&w, &states, &self.device)?;
        let labels = examples.iter().map(|e| e.label);
        let (loss_value, grads) = cross_entropy(logits, labels, &self.device);
        let mut g = Vec::with_capacity(p.numel());
        for (name, t) in &w {
            if !p.tensors.contains_key(name) {
                continue;
            }
            match t.grad(&grads) {
                Some(x) => g.extend(values(x)),
                None => g.extend(std::iter::repeat_n(0.0, t.dims()[0])),
            }
        }
        Ok((loss_value, g))
    }
}
