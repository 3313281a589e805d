//! Llama-style decoder: RMSNorm, rotary position embeddings (HF "rotate half" layout),
//! SwiGLU feed-forward, grouped-query attention, a KV cache, greedy and seeded sampling.
//! Loads safetensors with the usual Llama tensor names (`model.embed_tokens.weight`,
//! `model.layers.N.self_attn.q_proj.weight`, …, `model.norm.weight`, `lm_head.weight`).
//!
//! Job input: `GCT1` u32 `[n, prompt_len]` token ids or, for a GGUF model, a JSON array of
//! chats and texts ([`prompts`]). Output: `GCT1` u32 `[n, max_new_tokens]` generated ids.

mod answer_check;
mod check;
mod forced;
pub mod generate;
pub mod layers;
pub mod model;
mod rows;
mod sequence;

mod job;
mod matrix;
mod prefix;
mod prompts;

pub use answer_check::{first_unjustified, first_unjustified_with};
pub use check::{check_generation, TOKEN_MARGIN_PPM};
pub use forced::{ForcedLogits, TEACHER_FORCED_TOKENS};
pub use generate::{generate, generate_at, pick_token};
pub use job::{answer_texts, forget_checked_prompts, run_job};
pub use matrix::{Activations, Matrix};
pub use model::{random_params, KvCache, Llama, LlamaConfig};
pub use prefix::{PrefixCache, MIN_REUSED_TOKENS};
pub use prompts::input_is_text;
pub use rows::{DecoderWeights, RowDecoder};
pub use sequence::Sequence;
