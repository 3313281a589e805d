//! One served chat or text completion, as the provider's endpoint answers it and a verifier
//! audits it: the OpenAI request read into prompt ids, a token budget and the sampling
//! (`Prepared`), the chat model it runs on (`ChatModel`), the record of the answer a receipt
//! hashes (`AnswerRecord`), and the audit of a revealed request and answer (`audit_answer`).
//! Both sides use this one reading of a request, so that a verifier re-checks exactly what
//! the provider was asked.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use gpuchain_jobspec::Sampling;
use serde::Deserialize;

pub use gpuchain_jobspec::AnswerRecord;

use crate::gguf;
use crate::llama::{first_unjustified, PrefixCache, RowDecoder};
use crate::Result;

/// A loaded chat model and what requests need from its file.
pub struct ChatModel {
    /// Its name in the API.
    pub name: String,
    /// The row decoder answers run on.
    pub decoder: RowDecoder,
    /// Its chat format and the tokenizers that write prompts in it (message content read as
    /// text, so that it cannot open or close a turn).
    pub chat: gguf::ChatTemplate,
    /// The end-of-sequence token, if the file names one.
    pub eos: Option<u32>,
    /// Its context length in tokens.
    pub context: usize,
    /// The keys and values of prompts answered before, which later prompts that begin the
    /// same way start from ([`DEFAULT_PREFIX_CACHE_BYTES`] unless set otherwise).
    pub prefixes: Mutex<PrefixCache>,
}

/// Keys and values of earlier prompts a loaded chat model keeps by default: for SmolLM2-135M
/// (46 KB a token) about 700 tokens, some twenty chat prompts.
pub const DEFAULT_PREFIX_CACHE_BYTES: usize = 32 << 20;

impl ChatModel {
    /// Loads a GGUF model: one file, or any file of a split model (all of its files are
    /// read).
    pub fn load(file: &Path, name: String) -> Result<ChatModel> {
        // Mapped, not read: the decoder copies its blocks out once (see `gguf::file`).
        let mapped = gguf::GgufFile::open(file)?;
        let g = mapped.parse()?;
        let shape = gguf::llama::shape(&g)?;
        let decoder = gguf::llama::row_decoder(&g)?;
        let model = ChatModel {
            name,
            decoder,
            chat: gguf::ChatTemplate::of(&g)?,
            eos: gguf::eos_token(&g),
            context: shape.max_seq_len as usize,
            prefixes: Mutex::new(PrefixCache::new(DEFAULT_PREFIX_CACHE_BYTES)),
        };
        drop(g);
        drop(mapped);
        crate::heap::release_freed();
        Ok(model)
    }

    /// The prompt prefix cache, locked.
    pub fn prefixes(&self) -> MutexGuard<'_, PrefixCache> {
        // A poisoned lock only means a panic elsewhere mid-update; the entries are whole.
        self.prefixes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `tokens` as text (control tokens left out).
    pub fn text(&self, tokens: &[u32]) -> String {
        self.chat.template.decode(tokens, true).unwrap_or_default()
    }
}

/// The fields of an OpenAI chat completion request that are read.
#[derive(Debug, Deserialize)]
pub struct ChatRequest {
    /// Model name.
    pub model: String,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Server-sent events.
    #[serde(default)]
    pub stream: bool,
    /// Token limit (older name).
    pub max_tokens: Option<u32>,
    /// Token limit.
    pub max_completion_tokens: Option<u32>,
    /// Sampling temperature; 0 is greedy.
    pub temperature: Option<f64>,
    /// Nucleus share.
    pub top_p: Option<f64>,
    /// Sampler seed.
    pub seed: Option<u64>,
    /// Streaming options.
    pub stream_options: Option<StreamOptions>,
}

/// OpenAI's `stream_options`: with `include_usage`, a streamed answer ends with a chunk
/// that carries the token counts (and no choices).
#[derive(Debug, Default, Deserialize)]
pub struct StreamOptions {
    /// End with the token counts.
    #[serde(default)]
    pub include_usage: bool,
}

/// One message.
#[derive(Debug, Deserialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// Plain text.
    pub content: String,
}

/// Tokens a chat answer may run to when the request names no limit.
const DEFAULT_MAX_TOKENS: u32 = 256;

/// Tokens a text completion generates when the request names no limit (OpenAI's default).
const DEFAULT_COMPLETION_TOKENS: u32 = 16;

/// The fields of an OpenAI text completion request (`POST /v1/completions`) that are read;
/// the prompt is one string, read as plain text.
#[derive(Debug, Deserialize)]
pub struct CompletionRequest {
    /// Model name.
    pub model: String,
    /// The prompt.
    pub prompt: String,
    /// Server-sent events.
    #[serde(default)]
    pub stream: bool,
    /// Token limit.
    pub max_tokens: Option<u32>,
    /// Sampling temperature; 0 is greedy.
    pub temperature: Option<f64>,
    /// Nucleus share.
    pub top_p: Option<f64>,
    /// Sampler seed.
    pub seed: Option<u64>,
    /// Streaming options.
    pub stream_options: Option<StreamOptions>,
}

impl CompletionRequest {
    /// The request checked against `model`; an error is the message of a 400 answer.
    /// `fallback_seed` seeds a sampled request that names no seed.
    pub fn prepare(
        &self,
        model: &ChatModel,
        fallback_seed: u64,
    ) -> std::result::Result<Prepared, String> {
        if self.prompt.is_empty() {
            return Err("`prompt` is empty".into());
        }
        let prompt = model
            .chat
            .text_ids(&self.prompt)
            .map_err(|e| format!("the prompt: {e}"))?;
        let settings = Settings {
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            top_p: self.top_p,
            seed: self.seed,
        };
        settings.prepare(prompt, model, DEFAULT_COMPLETION_TOKENS, fallback_seed)
    }
}

/// What the HTTP side needs of a chat or text completion request.
pub trait Completion: serde::de::DeserializeOwned {
    /// The model it names.
    fn model(&self) -> &str;
    /// Whether it asks for server-sent events.
    fn stream(&self) -> bool;
    /// Whether a streamed answer should end with the token counts.
    fn include_usage(&self) -> bool;
    /// The request checked against `model`; an error is the message of a 400 answer.
    fn prepare(
        &self,
        model: &ChatModel,
        fallback_seed: u64,
    ) -> std::result::Result<Prepared, String>;
}

impl Completion for ChatRequest {
    fn model(&self) -> &str {
        &self.model
    }
    fn stream(&self) -> bool {
        self.stream
    }
    fn include_usage(&self) -> bool {
        self.stream_options
            .as_ref()
            .is_some_and(|o| o.include_usage)
    }
    fn prepare(
        &self,
        model: &ChatModel,
        fallback_seed: u64,
    ) -> std::result::Result<Prepared, String> {
        ChatRequest::prepare(self, model, fallback_seed)
    }
}

impl Completion for CompletionRequest {
    fn model(&self) -> &str {
        &self.model
    }
    fn stream(&self) -> bool {
        self.stream
    }
    fn include_usage(&self) -> bool {
        self.stream_options
            .as_ref()
            .is_some_and(|o| o.include_usage)
    }
    fn prepare(
        &self,
        model: &ChatModel,
        fallback_seed: u64,
    ) -> std::result::Result<Prepared, String> {
        CompletionRequest::prepare(self, model, fallback_seed)
    }
}

/// What a request asks for, checked: the prompt's ids, the token budget and the sampling.
pub struct Prepared {
    /// Prompt ids.
    pub prompt: Vec<u32>,
    /// Most tokens generated (the end-of-sequence token included).
    pub max_tokens: usize,
    /// Greedy or seeded.
    pub sampling: Sampling,
}

impl ChatRequest {
    /// The request checked against `model`; an error is the message of a 400 answer.
    /// `fallback_seed` seeds a sampled request that names no seed.
    pub fn prepare(
        &self,
        model: &ChatModel,
        fallback_seed: u64,
    ) -> std::result::Result<Prepared, String> {
        if self.messages.is_empty() {
            return Err("`messages` is empty".into());
        }
        gguf::check_roles(self.messages.iter().map(|m| m.role.as_str()))?;
        let messages: Vec<(&str, &str)> = self
            .messages
            .iter()
            .map(|m| (m.role.as_str(), m.content.as_str()))
            .collect();
        let prompt = model.chat.ids(&messages).map_err(|e| e.to_string())?;
        let settings = Settings {
            max_tokens: self.max_completion_tokens.or(self.max_tokens),
            temperature: self.temperature,
            top_p: self.top_p,
            seed: self.seed,
        };
        settings.prepare(prompt, model, DEFAULT_MAX_TOKENS, fallback_seed)
    }
}

/// The generation settings OpenAI's chat and text completion requests share.
struct Settings {
    max_tokens: Option<u32>,
    temperature: Option<f64>,
    top_p: Option<f64>,
    seed: Option<u64>,
}

impl Settings {
    fn prepare(
        &self,
        prompt: Vec<u32>,
        model: &ChatModel,
        default_max: u32,
        fallback_seed: u64,
    ) -> std::result::Result<Prepared, String> {
        let asked = self.max_tokens.unwrap_or(default_max);
        if asked == 0 {
            return Err("`max_tokens` must be at least 1".into());
        }
        let room = model.context.saturating_sub(prompt.len());
        if room == 0 || self.max_tokens.is_some() && asked as usize > room {
            return Err(format!(
                "the prompt ({} tokens) and max_tokens ({asked}) exceed the model's context of {} tokens",
                prompt.len(),
                model.context
            ));
        }
        let temperature = self.temperature.unwrap_or(1.0);
        let top_p = self.top_p.unwrap_or(1.0);
        let top_p_ok = top_p > 0.0 && top_p <= 1.0;
        if !(0.0..=100.0).contains(&temperature) || !top_p_ok {
            return Err("temperature must be in 0..=100 and top_p in (0, 1]".into());
        }
        let sampling = if temperature == 0.0 {
            Sampling::Greedy
        } else {
            Sampling::Seeded {
                seed: self.seed.unwrap_or(fallback_seed),
                temperature_milli: ((temperature * 1000.0).round() as u32).max(1),
                top_k: u32::try_from(model.decoder.vocab()).unwrap_or(u32::MAX),
                top_p_ppm: ((top_p * 1e6).round() as u32).clamp(1, 1_000_000),
            }
        };
        Ok(Prepared {
            prompt,
            max_tokens: (asked as usize).min(room),
            sampling,
        })
    }
}

/// The units a generated answer is charged: prompt plus generated tokens.
pub fn answer_units(prompt_tokens: usize, record: &AnswerRecord) -> u64 {
    (prompt_tokens + record.tokens.len()) as u64
}

/// Audits a revealed generation: `request` (the body the provider received, a chat or text
/// completion) answered by `response` (an [`AnswerRecord`]'s bytes) for `units`. `Ok(())`
/// when the answer is one the model gives: every token a justified pick from its own prefix
/// under the request's sampling, the answer stopped on the end-of-sequence token or ran to
/// its budget, its text the tokens' text, and the units its token count; otherwise why not.
pub fn audit_answer(
    model: &ChatModel,
    request: &[u8],
    response: &[u8],
    units: u64,
) -> std::result::Result<(), String> {
    let record: AnswerRecord = serde_json::from_slice(response)
        .map_err(|e| format!("the response is not an answer record: {e}"))?;
    if record.bytes() != response {
        return Err("the answer record is not in its canonical form".into());
    }
    let seed = record.seed.unwrap_or(0);
    let value: serde_json::Value =
        serde_json::from_slice(request).map_err(|e| format!("the request is not JSON: {e}"))?;
    let prepared = if value.get("messages").is_some() {
        let r: ChatRequest =
            serde_json::from_value(value).map_err(|e| format!("not a chat request: {e}"))?;
        r.prepare(model, seed)
    } else {
        let r: CompletionRequest =
            serde_json::from_value(value).map_err(|e| format!("not a completion request: {e}"))?;
        r.prepare(model, seed)
    }
    .map_err(|e| format!("the request should have been refused: {e}"))?;
    if let (Sampling::Seeded { seed: used, .. }, Some(said)) = (&prepared.sampling, record.seed) {
        if *used != said {
            return Err(format!(
                "the request names seed {used}, the answer says {said}"
            ));
        }
    }
    let tokens = &record.tokens;
    let stopped = model.eos.is_some() && tokens.last().copied() == model.eos;
    if tokens.len() > prepared.max_tokens {
        return Err(format!(
            "{} tokens generated, the budget is {}",
            tokens.len(),
            prepared.max_tokens
        ));
    }
    if !stopped && tokens.len() != prepared.max_tokens {
        return Err(format!(
            "the answer ends after {} tokens without the end-of-sequence token (budget {})",
            tokens.len(),
            prepared.max_tokens
        ));
    }
    if model.eos.is_some_and(|eos| {
        tokens
            .iter()
            .take(tokens.len().saturating_sub(1))
            .any(|t| *t == eos)
    }) {
        return Err("the answer goes on after its end-of-sequence token".into());
    }
    let text = model.text(tokens);
    if text != record.text {
        return Err("the answer's text is not its tokens' text".into());
    }
    let expected = answer_units(prepared.prompt.len(), &record);
    if units != expected {
        return Err(format!(
            "charged {units} units for {} prompt and {} generated tokens",
            prepared.prompt.len(),
            tokens.len()
        ));
    }
    match first_unjustified(&model.decoder, &prepared.prompt, tokens, &prepared.sampling) {
        None => Ok(()),
        Some(at) => Err(format!(
            "token {at} of the answer is not a pick the model makes from its own prefix"
        )),
    }
}
