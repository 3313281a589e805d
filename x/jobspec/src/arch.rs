//! Model architectures known to the compute runtime.

use borsh::{BorshDeserialize, BorshSerialize};
use serde::{Deserialize, Serialize};

/// A model architecture. The exact layer sizes of the fixed architectures are part of the
/// runtime (`gpuchain-compute` documents them); the Llama decoder carries its shape.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    BorshSerialize,
    BorshDeserialize,
    Serialize,
    Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ModelArch {
    /// Two-layer perceptron on 8×8 UCI digits (64 → 128 → 10, ReLU).
    DigitsMlp,
    /// Small convolutional network on 8×8 UCI digits.
    DigitsCnn,
    /// BERT-style sentence embedder with all-MiniLM-L6-v2's shape (384-d, 6 layers).
    MiniLmEmbedder,
    /// Llama-style decoder-only transformer; its shape is given by [`LlamaShape`].
    LlamaDecoder,
    /// A Llama-family decoder in a GGUF file (llama.cpp's format, e.g. SmolLM2-135M-Instruct):
    /// shape, quantised weights and tokenizer all come from the file.
    LlamaGguf,
    /// all-MiniLM-L6-v2 fine-tuned as a sentence classifier. Training: its last encoder
    /// layer and a linear head over the mean-pooled tokens are trained from the pretrained
    /// weights (`init` blob) on a tokenised sentence dataset. Inference: the fine-tuned
    /// weights (the pretrained ones with the trained tensors in place) score sentences.
    MiniLmClassifier,
}

/// The shape of a Llama-style decoder. Float settings are integers: `rope_theta` is in whole
/// units and `rms_norm_eps_ppb` is the RMSNorm epsilon in parts per billion.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct LlamaShape {
    /// Vocabulary size.
    pub vocab_size: u32,
    /// Model width.
    pub hidden_size: u32,
    /// SwiGLU inner width.
    pub intermediate_size: u32,
    /// Decoder layers.
    pub num_layers: u32,
    /// Query heads.
    pub num_heads: u32,
    /// Key/value heads (grouped-query attention); divides `num_heads`.
    pub num_kv_heads: u32,
    /// Longest sequence (prompt plus generated tokens).
    pub max_seq_len: u32,
    /// RoPE base.
    pub rope_theta: u32,
    /// RMSNorm epsilon in parts per billion (1e-5 is 10_000).
    pub rms_norm_eps_ppb: u32,
}
