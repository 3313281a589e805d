//! A decoder job's prompts, read from its input blob: token ids (`GCT1` u32
//! `[n, prompt_len]`, every prompt as long), or, for a GGUF model, text as clients write it —
//! a UTF-8 JSON array whose items are chats (`{"messages": [{"role", "content"}, …]}`, put
//! in the model's chat template with the assistant's turn opened, as
//! `POST /v1/chat/completions` reads them) or plain strings (read as text, as
//! `POST /v1/completions` reads a prompt). Text prompts may differ in length. The file's own
//! tokenizer turns them into ids, so every replica and verifier reads the same ids.

use serde::Deserialize;

use crate::gguf;
use crate::tensor_io::{decode, Tensor};
use crate::{Error, Result};

/// One item of a text input.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum TextPrompt {
    /// Plain text, read as text (a control token's name too).
    Plain(String),
    /// A conversation answered in the assistant's next turn.
    Chat(Chat),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Chat {
    messages: Vec<ChatMessage>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChatMessage {
    role: String,
    content: String,
}

/// Whether `input` is token ids (`GCT1`) rather than text.
fn is_token_ids(input: &[u8]) -> bool {
    input.starts_with(b"GCT1")
}

/// The prompts of `input`, one id row each: token ids as they are, text through the
/// tokenizer and chat format of `gguf` (text needs a GGUF model, whose file holds them),
/// after its BOS token where the file asks for one.
pub(crate) fn read_prompts(
    input: &[u8],
    chat: Option<&gguf::ChatTemplate>,
) -> Result<Vec<Vec<u32>>> {
    if is_token_ids(input) {
        return token_rows(input);
    }
    let Some(chat) = chat else {
        return Err(Error::BadInput(
            "text prompts need a GGUF model, whose file holds the tokenizer; this decoder takes \
             GCT1 u32 [n, prompt_len] token ids"
                .into(),
        ));
    };
    let items: Vec<TextPrompt> = serde_json::from_slice(input).map_err(|e| {
        Error::BadInput(format!(
            "decoder input is neither GCT1 token ids nor a JSON array of prompts \
             (strings or {{\"messages\": [...]}}): {e}"
        ))
    })?;
    if items.is_empty() {
        return Err(Error::BadInput("the input holds no prompts".into()));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let ids = match item {
                TextPrompt::Plain(text) => chat.text_ids(text)?,
                TextPrompt::Chat(messages) => chat_row(messages, chat)?,
            };
            if ids.is_empty() {
                return Err(Error::BadInput(format!("prompt {i} is empty")));
            }
            Ok(ids)
        })
        .collect::<Result<_>>()
        .map_err(|e| match e {
            Error::BadInput(m) => Error::BadInput(format!("decoder input: {m}")),
            other => other,
        })
}

/// A chat's ids: its messages in the model's chat format, each message's content read as
/// plain text so that none can open or close a turn.
fn chat_row(chat: &Chat, template: &gguf::ChatTemplate) -> Result<Vec<u32>> {
    if chat.messages.is_empty() {
        return Err(Error::BadInput("a chat has no messages".into()));
    }
    gguf::check_roles(chat.messages.iter().map(|m| m.role.as_str())).map_err(Error::BadInput)?;
    let messages: Vec<(&str, &str)> = chat
        .messages
        .iter()
        .map(|m| (m.role.as_str(), m.content.as_str()))
        .collect();
    template.ids(&messages)
}

/// The rows of a `GCT1` u32 `[n, prompt_len]` tensor.
fn token_rows(input: &[u8]) -> Result<Vec<Vec<u32>>> {
    match decode(input)? {
        Tensor::U32 { dims, data } if dims.len() == 2 && dims[0] > 0 && dims[1] > 0 => {
            Ok(data.chunks(dims[1]).map(<[u32]>::to_vec).collect())
        }
        Tensor::U32 { dims, .. } => Err(Error::BadInput(format!(
            "decoder input must be u32 [n, prompt_len] with n, prompt_len ≥ 1, got {dims:?}"
        ))),
        Tensor::F32 { .. } => Err(Error::BadInput(
            "decoder input must be u32 token ids, got f32".into(),
        )),
    }
}

/// Whether a decoder job's input is text, whose answers are read as text too.
pub fn input_is_text(input: &[u8]) -> bool {
    !is_token_ids(input)
}
