//! The job spec carried by an order.

use borsh::{BorshDeserialize, BorshSerialize};
use serde::{Deserialize, Serialize};

use crate::{BlobRef, LlamaShape, ModelArch, Tolerance, TrainingSpec};

/// A compute job: inference or data-parallel training.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JobSpec {
    /// Run a model over an input blob and produce an output blob.
    Inference(InferenceSpec),
    /// Train a model over k workers in rounds and produce a transcript root.
    Training(TrainingSpec),
}

/// The kind of a job's result, which fixes how two results are compared.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    /// Class logits (digits MLP/CNN).
    Logits,
    /// Sentence embeddings (MiniLM).
    Embeddings,
    /// Generated token ids (Llama).
    Tokens,
    /// Trained weights (training jobs).
    Training,
}

impl JobKind {
    /// The kind's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            JobKind::Logits => "logits",
            JobKind::Embeddings => "embeddings",
            JobKind::Tokens => "token",
            JobKind::Training => "training",
        }
    }
}

/// An inference job.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct InferenceSpec {
    /// Model architecture.
    pub arch: ModelArch,
    /// Model weights (safetensors).
    pub weights: BlobRef,
    /// Tokenizer (`tokenizer.json`); required by the MiniLM embedder.
    #[serde(default)]
    pub tokenizer: Option<BlobRef>,
    /// Input blob in the architecture's input encoding (see `docs/compute.md`).
    pub input: BlobRef,
    /// Items per forward pass.
    pub batch_size: u32,
    /// Decoder shape; required by and only allowed for the Llama decoder.
    #[serde(default)]
    pub llama: Option<LlamaShape>,
    /// Generation settings; required by and only allowed for the Llama decoder.
    #[serde(default)]
    pub generation: Option<GenerationSpec>,
    /// Overrides the default tolerance of the job kind.
    #[serde(default)]
    pub tolerance: Option<Tolerance>,
}

/// Text generation settings.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct GenerationSpec {
    /// Most tokens to generate after each prompt.
    pub max_new_tokens: u32,
    /// How the next token is picked.
    pub sampling: Sampling,
    /// Tokens that end a row (an end-of-turn token, say): the row stops after the first one
    /// it generates and the rest of its output repeats that token.
    #[serde(default)]
    pub stop_tokens: Vec<u32>,
}

/// Next-token selection.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Sampling {
    /// Highest logit, ties to the lowest token id.
    Greedy,
    /// Seeded sampling from the top-k tokens at a temperature (in thousandths), cut to the
    /// most likely of them that hold `top_p_ppm` of their probability (nucleus sampling).
    Seeded {
        /// Seed of the sampler's generator.
        seed: u64,
        /// Temperature × 1000 (1000 = 1.0).
        temperature_milli: u32,
        /// Sample among this many most likely tokens.
        top_k: u32,
        /// Keep the fewest most likely of the top-k tokens whose probability reaches this
        /// share (parts per million; 1,000,000 keeps all of them).
        top_p_ppm: u32,
    },
}

impl JobSpec {
    /// The model architecture this job runs.
    pub fn arch(&self) -> ModelArch {
        match self {
            JobSpec::Inference(s) => s.arch,
            JobSpec::Training(s) => s.arch,
        }
    }

    /// The kind of result this job produces.
    pub fn kind(&self) -> JobKind {
        match self {
            JobSpec::Training(_) => JobKind::Training,
            JobSpec::Inference(s) => match s.arch {
                ModelArch::DigitsMlp | ModelArch::DigitsCnn | ModelArch::MiniLmClassifier => {
                    JobKind::Logits
                }
                ModelArch::MiniLmEmbedder => JobKind::Embeddings,
                ModelArch::LlamaDecoder | ModelArch::LlamaGguf => JobKind::Tokens,
            },
        }
    }

    /// The tolerance verifiers apply: the spec's override or the job kind's default.
    pub fn tolerance(&self) -> Tolerance {
        let custom = match self {
            JobSpec::Inference(s) => s.tolerance.clone(),
            JobSpec::Training(s) => s.tolerance.clone(),
        };
        custom.unwrap_or_else(|| Tolerance::default_for(self.kind()))
    }

    /// Every blob the job needs, with its role.
    pub fn blobs(&self) -> Vec<(&'static str, &BlobRef)> {
        let mut out = Vec::new();
        match self {
            JobSpec::Inference(s) => {
                out.push(("weights", &s.weights));
                if let Some(t) = &s.tokenizer {
                    out.push(("tokenizer", t));
                }
                out.push(("input", &s.input));
            }
            JobSpec::Training(s) => {
                if let crate::WeightsInit::Blob(b) = &s.init {
                    out.push(("weights", b));
                }
                out.push(("dataset", &s.dataset));
            }
        }
        out
    }
}
