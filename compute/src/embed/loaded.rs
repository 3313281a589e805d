//! The embedder kept loaded on the CPU, for answering many requests (a serving endpoint)
//! without reading the weights for each.

use super::cpu::CpuEncoder;
use super::model::BertConfig;
use super::tokenize::SentenceTokenizer;
use crate::params::Params;
use crate::Result;

/// MiniLM-style sentence embedder, loaded once.
pub struct Embedder {
    encoder: CpuEncoder,
    tok: SentenceTokenizer,
}

impl Embedder {
    /// The embedder of `weights` (safetensors, HuggingFace BERT names) and `tokenizer`
    /// (`tokenizer.json`).
    pub fn new(weights: &[u8], tokenizer: &[u8]) -> Result<Embedder> {
        Ok(Embedder {
            encoder: CpuEncoder::load(&Params::from_safetensors(weights)?, &BertConfig::new())?,
            tok: SentenceTokenizer::from_bytes(tokenizer)?,
        })
    }

    /// Width of an embedding.
    pub fn hidden(&self) -> usize {
        self.encoder.hidden()
    }

    /// Unit-length embeddings of `sentences` (`[n, hidden]`, row-major), as an embedding job
    /// on the CPU backend gives them, and the count of tokens read.
    pub fn embed(&self, sentences: &[String], batch_size: usize) -> Result<(Vec<f32>, usize)> {
        let ids = self.tok.encode_all(sentences)?;
        let tokens = ids.iter().map(Vec::len).sum();
        Ok((self.encoder.embed_all(&ids, batch_size)?, tokens))
    }
}
