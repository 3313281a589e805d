//! The tokenizer stored in a GGUF file, rebuilt as a `tokenizers` tokenizer: a byte-level
//! BPE (`tokenizer.ggml.model = gpt2`) from its tokens, merges and control tokens, or a
//! SentencePiece BPE (`llama`: Llama 2, Mistral) from its tokens and scores
//! ([`super::sentencepiece`]). The byte-level BPE's pre-tokenizer
//! follows `tokenizer.ggml.pre`: `default`/`gpt2` (or none) is GPT-2's byte-level split,
//! `smollm` splits every digit on its own before it, `llama-bpe` (Llama 3) and `qwen2` split
//! by their own patterns; other names are refused rather than tokenized differently from
//! llama.cpp.

use serde_json::{json, Map, Value as Json};
use tokenizers::Tokenizer;

use super::reader::{Gguf, Value};
use crate::{Error, Result};

/// Llama 3's split before the byte-level BPE (`pre = llama-bpe`): contractions, letters
/// with at most one other character before them, digits in runs of up to three,
/// punctuation, newlines, and spaces that do not precede a word.
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Qwen2's split (`pre = qwen2`): Llama 3's, with every digit on its own.
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// ggml token type of a control token (`<|im_start|>` and the like).
pub(super) const CONTROL: u64 = 3;

pub(super) fn bad(what: impl Into<String>) -> Error {
    Error::BadWeights(format!("GGUF tokenizer: {}", what.into()))
}

fn strings(g: &Gguf<'_>, key: &str) -> Result<Vec<String>> {
    g.get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| bad(format!("missing `{key}`")))?
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| bad(format!("`{key}` holds a non-string")))
        })
        .collect()
}

/// The tokenizer of `g`: control tokens written in the text (`<|im_start|>`) are read as
/// the control tokens they name, as a chat prompt needs.
pub fn tokenizer(g: &Gguf<'_>) -> Result<Tokenizer> {
    build(g, true)
}

/// The tokenizer of `g` that reads all text as text, control-token names included (what
/// llama.cpp does with `parse_special = false`): for content that must not open or close a
/// turn of a chat.
pub fn plain_tokenizer(g: &Gguf<'_>) -> Result<Tokenizer> {
    build(g, false)
}

fn build(g: &Gguf<'_>, control_tokens: bool) -> Result<Tokenizer> {
    let model = g.get("tokenizer.ggml.model").and_then(Value::as_str);
    let sentencepiece = match model {
        Some("gpt2") => false,
        Some("llama") => true,
        other => {
            return Err(bad(format!(
                "model {other:?} (byte-level BPE, `gpt2`, and SentencePiece BPE, `llama`, are read)"
            )))
        }
    };
    let tokens = strings(g, "tokenizer.ggml.tokens")?;
    let types: Vec<u64> = g
        .get("tokenizer.ggml.token_type")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|v| v.as_u64().unwrap_or(1)).collect())
        .unwrap_or_default();
    let mut vocab = Map::new();
    let mut added = Vec::new();
    for (id, token) in tokens.iter().enumerate() {
        vocab.insert(token.clone(), json!(id));
        if control_tokens && types.get(id) == Some(&CONTROL) {
            added.push(json!({
                "id": id, "content": token, "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": true
            }));
        }
    }
    if sentencepiece {
        let spec = super::sentencepiece::spec(g, &tokens, &types, vocab, added)?;
        return spec
            .to_string()
            .parse::<Tokenizer>()
            .map_err(|e| bad(format!("building it: {e}")));
    }
    let merges = strings(g, "tokenizer.ggml.merges")?;
    let byte_level = |split: bool| {
        json!({
            "type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": split
        })
    };
    let pre = match g.get("tokenizer.ggml.pre").and_then(Value::as_str) {
        None | Some("default" | "gpt2") => byte_level(true),
        Some("smollm") => json!({
            "type": "Sequence",
            "pretokenizers": [{"type": "Digits", "individual_digits": true}, byte_level(true)]
        }),
        Some(name @ ("llama-bpe" | "qwen2")) => {
            let pattern = if name == "qwen2" {
                QWEN2_SPLIT
            } else {
                LLAMA3_SPLIT
            };
            json!({
                "type": "Sequence",
                "pretokenizers": [
                    {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
                     "invert": false},
                    byte_level(false)
                ]
            })
        }
        Some(other) => {
            return Err(bad(format!(
                "pre-tokenizer `{other}` (default, gpt2, smollm, llama-bpe and qwen2 are read)"
            )))
        }
    };
    let spec = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": null,
        "pre_tokenizer": pre,
        "post_processor": null,
        "decoder": byte_level(true),
        "model": {
            "type": "BPE", "dropout": null, "unk_token": null,
            "continuing_subword_prefix": null, "end_of_word_suffix": null,
            "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
            "vocab": Json::Object(vocab),
            "merges": merges,
        }
    });
    spec.to_string()
        .parse::<Tokenizer>()
        .map_err(|e| bad(format!("building it: {e}")))
}
