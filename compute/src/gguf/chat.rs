//! A GGUF chat model's prompt format, read from its `tokenizer.chat_template`: ChatML
//! (`<|im_start|>role\n…<|im_end|>\n`: SmolLM2, Qwen2, Qwen2.5, Qwen3) or Llama 3's headers
//! (`<|start_header_id|>role<|end_header_id|>\n\n…<|eot_id|>`). The template itself is not
//! run: the format is recognised by its markers, and a default system message is taken from
//! it where the template writes one as literal text (SmolLM2's, Qwen2.5's). Prompts are built
//! piece by piece, the format's markers read as control tokens and each message's content as
//! plain text, so that no message can open or close a turn.

use tokenizers::Tokenizer;

use super::reader::{Gguf, Value};
use super::tokenizer::{plain_tokenizer, tokenizer};
use crate::{Error, Result};

/// How turns are written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Format {
    /// `<|im_start|>role\ncontent<|im_end|>\n`, then `<|im_start|>assistant\n`; the default
    /// system message is put first when a conversation brings none.
    ChatMl {
        /// The template's system message for conversations without one.
        default_system: Option<String>,
    },
    /// `<|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>` (content trimmed, as
    /// Llama 3's template does), then the assistant's header.
    Llama3,
}

/// A model's chat format with the tokenizers that write its prompts.
pub struct ChatTemplate {
    /// The format of its turns; `None` when the file has no template this reads.
    pub format: Option<Format>,
    /// The token put before every prompt (`tokenizer.ggml.add_bos_token`), if any.
    pub bos: Option<u32>,
    /// Reads control-token names (`<|im_start|>`) as the control tokens.
    pub template: Tokenizer,
    /// Reads all text as text.
    pub plain: Tokenizer,
}

/// The system message a ChatML template writes as literal text after
/// `<|im_start|>system` and a newline, up to `<|im_end|>` (the first such place; Qwen2.5's
/// template writes the conversation's own system message in another branch before it); none
/// where the template only builds it from the conversation (quotes, `+` or braces inside
/// mean an expression, not text).
fn default_system(template: &str) -> Option<String> {
    const OPEN: &str = "<|im_start|>system";
    template.match_indices(OPEN).find_map(|(at, _)| {
        let rest = &template[at + OPEN.len()..];
        let rest = rest
            .strip_prefix('\n')
            .or_else(|| rest.strip_prefix("\\n"))?;
        let text = &rest[..rest.find("<|im_end|>")?];
        let literal = !text.is_empty() && !text.contains(['\'', '"', '+', '{', '}', '\\']);
        literal.then(|| text.to_string())
    })
}

impl ChatTemplate {
    /// The chat format of `g`, with its tokenizers.
    pub fn of(g: &Gguf<'_>) -> Result<ChatTemplate> {
        let template = tokenizer(g)?;
        let plain = plain_tokenizer(g)?;
        let source = g.get("tokenizer.chat_template").and_then(Value::as_str);
        let format = match source {
            Some(t) if t.contains("<|start_header_id|>") => Some(Format::Llama3),
            Some(t) if t.contains("<|im_start|>") => Some(Format::ChatMl {
                default_system: default_system(t),
            }),
            _ => None,
        };
        let markers: &[&str] = match &format {
            Some(Format::Llama3) => &["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
            Some(Format::ChatMl { .. }) => &["<|im_start|>", "<|im_end|>"],
            None => &[],
        };
        for marker in markers {
            let ids = template
                .encode(*marker, false)
                .map_err(|e| Error::BadWeights(format!("GGUF chat template: {e}")))?;
            if ids.get_ids().len() != 1 {
                return Err(Error::BadWeights(format!(
                    "GGUF chat template: `{marker}` is not one control token of the vocabulary"
                )));
            }
        }
        // Without the key, llama.cpp puts BOS before SentencePiece prompts only.
        let add_bos = match g.get("tokenizer.ggml.add_bos_token") {
            Some(Value::Bool(b)) => *b,
            _ => g.get("tokenizer.ggml.model").and_then(Value::as_str) == Some("llama"),
        };
        let bos = g
            .get("tokenizer.ggml.bos_token_id")
            .and_then(Value::as_u64)
            .and_then(|b| u32::try_from(b).ok())
            .filter(|_| add_bos);
        Ok(ChatTemplate {
            format,
            bos,
            template,
            plain,
        })
    }

    fn format(&self) -> Result<&Format> {
        self.format.as_ref().ok_or_else(|| {
            Error::BadInput(
                "this model's file has no chat template in a format the decoder writes \
                 (ChatML, Llama 3): send the prompt as text or token ids"
                    .into(),
            )
        })
    }

    /// The prompt's text: every turn of `messages` (`(role, content)`), the default system
    /// message first where the format has one and the conversation does not, then the
    /// assistant's turn opened. The BOS token, which is not text, is left out.
    pub fn prompt(&self, messages: &[(&str, &str)]) -> Result<String> {
        let mut out = String::new();
        for piece in self.pieces(messages)? {
            out.push_str(piece.text());
        }
        Ok(out)
    }

    /// The prompt's ids: the BOS token where the file asks for one, the format's markers as
    /// control tokens and each message's content as plain text.
    pub fn ids(&self, messages: &[(&str, &str)]) -> Result<Vec<u32>> {
        let mut ids: Vec<u32> = self.bos.into_iter().collect();
        for piece in self.pieces(messages)? {
            let (tokenizer, text) = match &piece {
                Piece::Markers(t) => (&self.template, t.as_str()),
                Piece::Content(t) => (&self.plain, *t),
            };
            ids.extend(encode(tokenizer, text)?);
        }
        Ok(ids)
    }

    /// A plain-text prompt's ids (control-token names read as text), after the BOS token
    /// where the file asks for one.
    pub fn text_ids(&self, text: &str) -> Result<Vec<u32>> {
        let mut ids: Vec<u32> = self.bos.into_iter().collect();
        ids.extend(encode(&self.plain, text)?);
        Ok(ids)
    }

    fn pieces<'m>(&self, messages: &[(&str, &'m str)]) -> Result<Vec<Piece<'m>>> {
        let mut out = Vec::new();
        match self.format()? {
            Format::ChatMl { default_system } => {
                let first_is_system = messages.first().is_some_and(|(r, _)| *r == "system");
                if let (Some(system), false) = (default_system, first_is_system) {
                    out.push(Piece::Markers(format!(
                        "<|im_start|>system\n{system}<|im_end|>\n"
                    )));
                }
                for (role, content) in messages {
                    out.push(Piece::Markers(format!("<|im_start|>{role}\n")));
                    out.push(Piece::Content(content));
                    out.push(Piece::Markers("<|im_end|>\n".into()));
                }
                out.push(Piece::Markers("<|im_start|>assistant\n".into()));
            }
            Format::Llama3 => {
                for (role, content) in messages {
                    out.push(Piece::Markers(format!(
                        "<|start_header_id|>{role}<|end_header_id|>\n\n"
                    )));
                    out.push(Piece::Content(content.trim()));
                    out.push(Piece::Markers("<|eot_id|>".into()));
                }
                out.push(Piece::Markers(
                    "<|start_header_id|>assistant<|end_header_id|>\n\n".into(),
                ));
            }
        }
        Ok(out)
    }
}

/// A run of a prompt's text: the format's own (markers, the default system message) or a
/// message's content.
enum Piece<'m> {
    Markers(String),
    Content(&'m str),
}

impl Piece<'_> {
    fn text(&self) -> &str {
        match self {
            Piece::Markers(t) => t,
            Piece::Content(t) => t,
        }
    }
}

fn encode(t: &Tokenizer, text: &str) -> Result<Vec<u32>> {
    t.encode(text, false)
        .map(|e| e.get_ids().to_vec())
        .map_err(|e| Error::BadInput(format!("tokenizing: {e}")))
}

#[cfg(test)]
mod tests {
    use super::default_system;

    #[test]
    fn a_default_system_message_is_read_only_where_the_template_writes_it_as_text() {
        let smollm = "{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are SmolLM<|im_end|>\n' }}{% endif %}";
        assert_eq!(default_system(smollm).as_deref(), Some("You are SmolLM"));
        let escaped = "{{- '<|im_start|>system\\nYou are Qwen.<|im_end|>\\n' }}";
        assert_eq!(default_system(escaped).as_deref(), Some("You are Qwen."));
        let built = "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}";
        assert_eq!(default_system(built), None);
        assert_eq!(default_system("{{ '<|im_start|>' + m['role'] }}"), None);
        let both = format!("{built}{{%- else %}}{escaped}");
        assert_eq!(default_system(&both).as_deref(), Some("You are Qwen."));
    }
}
