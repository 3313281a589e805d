//! Llama-style decoder: RMSNorm, rotary position embeddings (HF "rotate half" layout),
//! SwiGLU feed-forward, grouped-query attention, a KV cache, greedy and seeded sampling.
//! Loads safetensors with the usual Llama tensor names (`model.embed_tokens.weight`,
//! `model.layers.N.self_attn.q_proj.weight`, …, `model.norm.weight`, `lm_head.weight`).
//!
//! Job input: `GCT1` u32 `[n, prompt_len]` token ids. Output: `GCT1` u32
//! `[n, max_new_tokens]` generated ids.

mod answer_check;
mod check;
pub mod generate;
pub mod layers;
pub mod model;
mod rows;
mod sequence;

mod job;
mod matrix;

pub use answer_check::first_unjustified;
pub use check::{check_generation, TOKEN_MARGIN_PPM};
pub use generate::{generate, pick_token};
pub use job::run_job;
pub use matrix::Matrix;
pub use model::{random_params, KvCache, Llama, LlamaConfig};
pub use rows::{DecoderWeights, RowDecoder};
pub use sequence::Sequence;
