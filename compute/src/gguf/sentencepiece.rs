//! The SentencePiece BPE tokenizer of a GGUF file (`tokenizer.ggml.model = llama`: Llama 2,
//! Mistral, TinyLlama, …) as a `tokenizers` BPE.
//!
//! llama.cpp tokenises such a file the way SentencePiece does: a space is put before the
//! text (`tokenizer.ggml.add_space_prefix`, on unless the file says otherwise) and every
//! space becomes `▁`; the text's characters are then merged pairwise, always the adjacent
//! pair whose joined piece has the highest score (`tokenizer.ggml.scores`) among pieces in
//! the vocabulary, leftmost first; a character no piece covers is spelt as its UTF-8 bytes
//! (`<0xE6>`…). A BPE whose merges are every split of every piece into two pieces, ranked
//! by the joined piece's score, merges the same pairs in the same order; its byte fallback
//! spells unknown characters the same way.

use std::cmp::Reverse;

use serde_json::{json, Map, Value as Json};

use super::reader::{Gguf, Value};
use super::tokenizer::{bad, CONTROL};
use crate::Result;

/// SentencePiece's stand-in for a space.
const SPACE: &str = "\u{2581}";

/// ggml token types that are never merged into: unknown, control, unused and byte tokens.
const NOT_MERGED: [u64; 4] = [2, CONTROL, 5, 6];

/// The `tokenizers` JSON of the file's SentencePiece tokenizer: `vocab` maps every token to
/// its id, `added` are the control tokens read as such.
pub(super) fn spec(
    g: &Gguf<'_>,
    tokens: &[String],
    types: &[u64],
    vocab: Map<String, Json>,
    added: Vec<Json>,
) -> Result<Json> {
    let scores: Vec<f64> = g
        .get("tokenizer.ggml.scores")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("missing `tokenizer.ggml.scores`"))?
        .iter()
        .map(|v| v.as_f64().ok_or_else(|| bad("a non-numeric score")))
        .collect::<Result<_>>()?;
    if scores.len() != tokens.len() {
        return Err(bad(format!(
            "{} scores for {} tokens",
            scores.len(),
            tokens.len()
        )));
    }
    let mergeable = |id: usize| !NOT_MERGED.contains(types.get(id).unwrap_or(&1));
    // Every split of a piece into two pieces; ranked by the joined piece's score (higher
    // first), then by its id and the split's position, so ranks never tie.
    let mut merges: Vec<(Reverse<i64>, usize, usize, String, String)> = Vec::new();
    for (id, piece) in tokens.iter().enumerate().filter(|(id, _)| mergeable(*id)) {
        // Scores are compared as fixed-point integers (micro-units), which keeps the order
        // total; SentencePiece's scores are log-probabilities or negated ranks.
        let score = (scores[id] * 1e6).round() as i64;
        for (at, _) in piece.char_indices().skip(1) {
            let (left, right) = piece.split_at(at);
            if vocab.contains_key(left) && vocab.contains_key(right) {
                merges.push((Reverse(score), id, at, left.to_string(), right.to_string()));
            }
        }
    }
    merges.sort();
    let merges: Vec<Json> = merges
        .into_iter()
        .map(|(_, _, _, l, r)| json!([l, r]))
        .collect();
    let space_prefix = !matches!(
        g.get("tokenizer.ggml.add_space_prefix"),
        Some(Value::Bool(false))
    );
    let mut normalizers = Vec::new();
    if space_prefix {
        normalizers.push(json!({"type": "Prepend", "prepend": SPACE}));
    }
    normalizers.push(json!({"type": "Replace", "pattern": {"String": " "}, "content": SPACE}));
    let unk = g
        .get("tokenizer.ggml.unknown_token_id")
        .and_then(Value::as_u64)
        .and_then(|id| tokens.get(id as usize))
        .cloned();
    let mut decoders = vec![
        json!({"type": "Replace", "pattern": {"String": SPACE}, "content": " "}),
        json!({"type": "ByteFallback"}),
        json!({"type": "Fuse"}),
    ];
    if space_prefix {
        decoders.push(json!({"type": "Strip", "content": " ", "start": 1, "stop": 0}));
    }
    Ok(json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": null,
        "post_processor": null,
        "decoder": {"type": "Sequence", "decoders": decoders},
        "model": {
            "type": "BPE", "dropout": null, "unk_token": unk,
            "continuing_subword_prefix": null, "end_of_word_suffix": null,
            "fuse_unk": true, "byte_fallback": true, "ignore_merges": false,
            "vocab": Json::Object(vocab),
            "merges": merges,
        }
    }))
}
