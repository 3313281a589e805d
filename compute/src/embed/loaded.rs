//! The embedder kept loaded on the CPU backend, for answering many requests (a serving
//! endpoint) without reading the weights for each.

use std::sync::Mutex;

use super::job::by_length;
use super::model::{BertConfig, BertEmbedder};
use super::tokenize::SentenceTokenizer;
use crate::backend::CpuBackend;
use crate::params::Params;
use crate::{Error, Result};

/// MiniLM-style sentence embedder, loaded once.
pub struct Embedder {
    // burn modules are not `Sync`; one request embeds at a time.
    model: Mutex<BertEmbedder<CpuBackend>>,
    tok: SentenceTokenizer,
    hidden: usize,
}

impl Embedder {
    /// The embedder of `weights` (safetensors, HuggingFace BERT names) and `tokenizer`
    /// (`tokenizer.json`).
    pub fn new(weights: &[u8], tokenizer: &[u8]) -> Result<Embedder> {
        let cfg = BertConfig::new();
        let model =
            cfg.load::<CpuBackend>(&Params::from_safetensors(weights)?, &Default::default())?;
        Ok(Embedder {
            model: Mutex::new(model),
            tok: SentenceTokenizer::from_bytes(tokenizer)?,
            hidden: cfg.hidden,
        })
    }

    /// Width of an embedding.
    pub fn hidden(&self) -> usize {
        self.hidden
    }

    /// Unit-length embeddings of `sentences` (`[n, hidden]`, row-major), as an embedding job
    /// on the CPU backend gives them, and the count of tokens read.
    pub fn embed(&self, sentences: &[String], batch_size: usize) -> Result<(Vec<f32>, usize)> {
        let ids = self.tok.encode_all(sentences)?;
        let tokens = ids.iter().map(Vec::len).sum();
        let model = self
            .model
            .lock()
            .map_err(|_| Error::BadInput("the embedder failed in another request".into()))?;
        let device = Default::default();
        let out = by_length(&ids, batch_size, self.hidden, |batch| {
            Ok(crate::models::burn_io::values(
                model.forward(batch, &device),
            ))
        })?;
        Ok((out, tokens))
    }
}
