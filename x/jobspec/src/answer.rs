//! What a served answer's receipt hashes for a generated answer (x/serving receipts; the
//! provider writes it, the client's gateway rebuilds it, a verifier audits it).

use serde::{Deserialize, Serialize};

/// What a receipt's response hash covers for a generated answer: the text the client got,
/// every token id generated (the end-of-sequence token last when the answer stopped on it)
/// and the seed the sampler used. Its bytes are `serde_json` of this struct, fields in this
/// order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerRecord {
    /// The answer's text.
    pub text: String,
    /// Every generated token id.
    pub tokens: Vec<u32>,
    /// The sampler's seed (`None` for greedy answers).
    pub seed: Option<u64>,
}

impl AnswerRecord {
    /// Its bytes, as hashed.
    pub fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}
