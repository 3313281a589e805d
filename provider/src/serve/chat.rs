//! One chat or text completion: the request's messages as ChatML token ids
//! (`gguf::chat_ids`: message content read as plain text) or its prompt as plain text, and
//! the generation settings both share.

use gpuchain_jobspec::Sampling;
use serde::Deserialize;

use super::Model;

/// The fields of an OpenAI chat completion request that this endpoint reads.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatRequest {
    pub(crate) model: String,
    pub(crate) messages: Vec<Message>,
    #[serde(default)]
    pub(crate) stream: bool,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) max_completion_tokens: Option<u32>,
    pub(crate) temperature: Option<f64>,
    pub(crate) top_p: Option<f64>,
    pub(crate) seed: Option<u64>,
    pub(crate) stream_options: Option<StreamOptions>,
}

/// OpenAI's `stream_options`: with `include_usage`, a streamed answer ends with a chunk
/// that carries the token counts (and no choices).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct StreamOptions {
    #[serde(default)]
    pub(crate) include_usage: bool,
}

/// One message.
#[derive(Debug, Deserialize)]
pub(crate) struct Message {
    pub(crate) role: String,
    pub(crate) content: String,
}

/// Tokens a chat answer may run to when the request names no limit.
const DEFAULT_MAX_TOKENS: u32 = 256;

/// Tokens a text completion generates when the request names no limit (OpenAI's default).
const DEFAULT_COMPLETION_TOKENS: u32 = 16;

/// The fields of an OpenAI text completion request (`POST /v1/completions`) that this
/// endpoint reads; the prompt is one string, read as plain text.
#[derive(Debug, Deserialize)]
pub(crate) struct CompletionRequest {
    pub(crate) model: String,
    pub(crate) prompt: String,
    #[serde(default)]
    pub(crate) stream: bool,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) temperature: Option<f64>,
    pub(crate) top_p: Option<f64>,
    pub(crate) seed: Option<u64>,
    pub(crate) stream_options: Option<StreamOptions>,
}

impl CompletionRequest {
    /// The request checked against `model`; an error is the message of a 400 answer.
    pub(crate) fn prepare(&self, model: &Model) -> Result<Prepared, String> {
        if self.prompt.is_empty() {
            return Err("`prompt` is empty".into());
        }
        let prompt = model
            .plain
            .encode(self.prompt.as_str(), false)
            .map_err(|e| format!("tokenizing the prompt: {e}"))?
            .get_ids()
            .to_vec();
        let settings = Settings {
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            top_p: self.top_p,
            seed: self.seed,
        };
        settings.prepare(prompt, model, DEFAULT_COMPLETION_TOKENS)
    }
}

/// What the HTTP side needs of a chat or text completion request.
pub(crate) trait Completion: serde::de::DeserializeOwned {
    /// The model it names.
    fn model(&self) -> &str;
    /// Whether it asks for server-sent events.
    fn stream(&self) -> bool;
    /// Whether a streamed answer should end with the token counts.
    fn include_usage(&self) -> bool;
    /// The request checked against `model`; an error is the message of a 400 answer.
    fn prepare(&self, model: &Model) -> Result<Prepared, String>;
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
    fn prepare(&self, model: &Model) -> Result<Prepared, String> {
        ChatRequest::prepare(self, model)
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
    fn prepare(&self, model: &Model) -> Result<Prepared, String> {
        CompletionRequest::prepare(self, model)
    }
}

/// What a request asks for, checked: the prompt's ids, the token budget and the sampling.
pub(crate) struct Prepared {
    pub(crate) prompt: Vec<u32>,
    pub(crate) max_tokens: usize,
    pub(crate) sampling: Sampling,
}

impl ChatRequest {
    /// The request checked against `model`; an error is the message of a 400 answer.
    pub(crate) fn prepare(&self, model: &Model) -> Result<Prepared, String> {
        if self.messages.is_empty() {
            return Err("`messages` is empty".into());
        }
        if let Some(m) = self
            .messages
            .iter()
            .find(|m| !matches!(m.role.as_str(), "system" | "user" | "assistant"))
        {
            return Err(format!(
                "role `{}`: system, user and assistant are supported",
                m.role
            ));
        }
        let messages: Vec<(&str, &str)> = self
            .messages
            .iter()
            .map(|m| (m.role.as_str(), m.content.as_str()))
            .collect();
        let prompt = gpuchain_compute::gguf::chat_ids(&model.template, &model.plain, &messages)
            .map_err(|e| e.to_string())?;
        let settings = Settings {
            max_tokens: self.max_completion_tokens.or(self.max_tokens),
            temperature: self.temperature,
            top_p: self.top_p,
            seed: self.seed,
        };
        settings.prepare(prompt, model, DEFAULT_MAX_TOKENS)
    }
}

/// The generation settings OpenAI's chat and text completion requests share.
pub(crate) struct Settings {
    pub(crate) max_tokens: Option<u32>,
    pub(crate) temperature: Option<f64>,
    pub(crate) top_p: Option<f64>,
    pub(crate) seed: Option<u64>,
}

impl Settings {
    /// `prompt` with these settings checked against `model` (`default_max` tokens when the
    /// request names no limit); an error is the message of a 400 answer.
    pub(crate) fn prepare(
        &self,
        prompt: Vec<u32>,
        model: &Model,
        default_max: u32,
    ) -> Result<Prepared, String> {
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
                seed: self
                    .seed
                    .unwrap_or_else(|| rand_core::RngCore::next_u64(&mut rand_core::OsRng)),
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
