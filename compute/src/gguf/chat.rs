//! A GGUF chat model's prompt format: the file's own `tokenizer.chat_template`, a Jinja
//! template, run by minijinja the way transformers runs chat templates (blocks trimmed,
//! Python's string methods, `raise_exception`), then tokenized the way llama.cpp tokenizes a
//! rendered chat: each control token the template writes (`<|im_start|>`, `<s>`) as that
//! token, and the text between two of them, a message's content included, as one piece, so
//! that a SentencePiece tokenizer merges across the template's text and the message exactly
//! as llama.cpp does (`[INST] ` and the first word of a Llama 2 prompt, for one).
//!
//! A message never opens or closes a turn: control-token names inside a message (or its
//! role) are swapped for private-use stand-ins before rendering and put back as plain text
//! after the rendered prompt was split at the template's control tokens.
//!
//! Any replica and verifier must read a chat into the same ids: the template comes from the
//! model's file (named by its hash), rendering is deterministic (no clock: templates that
//! ask for `strftime_now` take their own fallback) and bounded by a fuel limit, so a file
//! with a runaway template fails the job instead of holding a provider.

use minijinja::syntax::SyntaxConfig;
use minijinja::{context, Environment, ErrorKind};
use tokenizers::Tokenizer;

use super::reader::{Gguf, Value};
use super::tokenizer::{plain_tokenizer, tokenizer};
use crate::{Error, Result};

/// Template instructions one rendering may run: a hundred-turn chat through a large
/// template takes well under a tenth of this.
const FUEL: u64 = 5_000_000;

/// The stand-in for the control-token name at index `i` of [`ChatTemplate::controls`]:
/// `U+F0000 + i`, in Unicode's private-use plane 15.
const STAND_IN: u32 = 0xF0000;

/// A model's chat template with the tokenizers that read its prompts.
pub struct ChatTemplate {
    /// The file's Jinja source; `None` when it has none.
    source: Option<String>,
    /// The text of the BOS and EOS tokens, as templates write them (`bos_token`).
    bos_text: String,
    eos_text: String,
    /// The token put before every prompt (`tokenizer.ggml.add_bos_token`), if any.
    pub bos: Option<u32>,
    /// The vocabulary's control tokens, longest name first (ties by name).
    controls: Vec<(String, u32)>,
    /// Whether some control token's name starts with this byte.
    first_bytes: [bool; 256],
    /// Reads control-token names (`<|im_start|>`) as the control tokens.
    pub template: Tokenizer,
    /// Reads all text as text.
    pub plain: Tokenizer,
}

/// A run of a text split at control-token names.
enum Fragment<'t> {
    /// The control token at this index of [`ChatTemplate::controls`].
    Control(usize),
    Text(&'t str),
}

fn token_text(g: &Gguf<'_>, key: &str) -> String {
    let id = g.get(key).and_then(Value::as_u64);
    let tokens = g.get("tokenizer.ggml.tokens").and_then(Value::as_array);
    match (id, tokens) {
        (Some(id), Some(tokens)) => usize::try_from(id)
            .ok()
            .and_then(|i| tokens.get(i))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        _ => String::new(),
    }
}

impl ChatTemplate {
    /// The chat template of `g`, with its tokenizers.
    pub fn of(g: &Gguf<'_>) -> Result<ChatTemplate> {
        let template = tokenizer(g)?;
        let plain = plain_tokenizer(g)?;
        let mut controls: Vec<(String, u32)> = template
            .get_added_tokens_decoder()
            .into_iter()
            .filter(|(_, t)| t.special)
            .map(|(id, t)| (t.content, id))
            .collect();
        controls.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        let mut first_bytes = [false; 256];
        for (name, _) in &controls {
            if let Some(b) = name.bytes().next() {
                first_bytes[usize::from(b)] = true;
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
            source: g
                .get("tokenizer.chat_template")
                .and_then(Value::as_str)
                .map(str::to_string),
            bos_text: token_text(g, "tokenizer.ggml.bos_token_id"),
            eos_text: token_text(g, "tokenizer.ggml.eos_token_id"),
            bos,
            controls,
            first_bytes,
            template,
            plain,
        })
    }

    /// Whether the file has a chat template.
    pub fn has_template(&self) -> bool {
        self.source.is_some()
    }

    /// The prompt's text as the template writes it for `messages` (`(role, content)`), the
    /// assistant's turn opened (BOS included where the template writes it).
    pub fn prompt(&self, messages: &[(&str, &str)]) -> Result<String> {
        let rendered = self.render(messages)?;
        Ok(self.restore(&rendered))
    }

    /// The prompt's ids: the BOS token where the file asks for one and the template did
    /// not write it, the template's control tokens as themselves and all other text, each
    /// message's content included, as text.
    pub fn ids(&self, messages: &[(&str, &str)]) -> Result<Vec<u32>> {
        let rendered = self.render(messages)?;
        let mut ids = Vec::new();
        for fragment in self.split(&rendered) {
            match fragment {
                Fragment::Control(i) => ids.push(self.controls[i].1),
                Fragment::Text(text) => ids.extend(encode(&self.plain, &self.restore(text))?),
            }
        }
        if let Some(bos) = self.bos {
            if ids.first() != Some(&bos) {
                ids.insert(0, bos);
            }
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

    /// The template run over `messages` with their control-token names stood in for.
    fn render(&self, messages: &[(&str, &str)]) -> Result<String> {
        let source = self.source.as_deref().ok_or_else(|| {
            Error::BadInput(
                "this model's file has no chat template: send the prompt as text or token ids"
                    .into(),
            )
        })?;
        let mut turns = Vec::with_capacity(messages.len());
        for (role, content) in messages {
            turns.push(
                context! { role => self.stand_in(role)?, content => self.stand_in(content)? },
            );
        }
        let bad = |e: minijinja::Error| Error::BadInput(format!("the model's chat template: {e}"));
        let mut env = Environment::new();
        env.set_syntax(
            SyntaxConfig::builder()
                .trim_blocks(true)
                .lstrip_blocks(true)
                .build()
                .map_err(bad)?,
        );
        env.set_fuel(Some(FUEL));
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function(
            "raise_exception",
            |message: String| -> std::result::Result<String, minijinja::Error> {
                Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
            },
        );
        env.template_from_str(source)
            .map_err(bad)?
            .render(context! {
                messages => turns,
                add_generation_prompt => true,
                bos_token => self.bos_text.as_str(),
                eos_token => self.eos_text.as_str(),
            })
            .map_err(bad)
    }

    /// The control token whose name `text` starts with (its index in `controls`), and the
    /// name's length.
    fn control_at(&self, text: &str) -> Option<(usize, usize)> {
        let first = usize::from(*text.as_bytes().first()?);
        if !self.first_bytes[first] {
            return None;
        }
        self.controls
            .iter()
            .enumerate()
            .find(|(_, (name, _))| !name.is_empty() && text.starts_with(name.as_str()))
            .map(|(i, (name, _))| (i, name.len()))
    }

    /// `text` (a message's role or content) with each control-token name replaced by its
    /// stand-in. Refused when the text holds a stand-in character itself.
    fn stand_in(&self, text: &str) -> Result<String> {
        let mut out = String::with_capacity(text.len());
        for fragment in self.split(text) {
            match fragment {
                Fragment::Text(t) => {
                    if let Some(c) = t.chars().find(|c| self.stood_in(*c).is_some()) {
                        return Err(Error::BadInput(format!(
                            "a chat message holds U+{:X}, a private-use character the chat \
                             template reserves",
                            u32::from(c)
                        )));
                    }
                    out.push_str(t);
                }
                Fragment::Control(i) => {
                    let code = u32::try_from(i).ok().and_then(|i| i.checked_add(STAND_IN));
                    out.push(code.and_then(char::from_u32).ok_or_else(|| {
                        Error::BadInput("the vocabulary has too many control tokens".into())
                    })?);
                }
            }
        }
        Ok(out)
    }

    /// The control-token name `c` stands in for.
    fn stood_in(&self, c: char) -> Option<&str> {
        let i = u32::from(c).checked_sub(STAND_IN)?;
        self.controls
            .get(usize::try_from(i).ok()?)
            .map(|(name, _)| name.as_str())
    }

    /// `text` with stand-ins put back as the names they stand for.
    fn restore(&self, text: &str) -> String {
        text.chars()
            .fold(String::with_capacity(text.len()), |mut out, c| {
                match self.stood_in(c) {
                    Some(name) => out.push_str(name),
                    None => out.push(c),
                }
                out
            })
    }

    /// `text` split at control-token names (in a rendered prompt: the control tokens the
    /// template wrote).
    fn split<'t>(&self, text: &'t str) -> Vec<Fragment<'t>> {
        let mut out = Vec::new();
        let (mut start, mut at) = (0, 0);
        while let Some(c) = text[at..].chars().next() {
            match self.control_at(&text[at..]) {
                Some((i, len)) => {
                    if start < at {
                        out.push(Fragment::Text(&text[start..at]));
                    }
                    out.push(Fragment::Control(i));
                    at += len;
                    start = at;
                }
                None => at += c.len_utf8(),
            }
        }
        if start < text.len() {
            out.push(Fragment::Text(&text[start..]));
        }
        out
    }
}

fn encode(t: &Tokenizer, text: &str) -> Result<Vec<u32>> {
    t.encode(text, false)
        .map(|e| e.get_ids().to_vec())
        .map_err(|e| Error::BadInput(format!("tokenizing: {e}")))
}
