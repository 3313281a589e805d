//! Tokenising sentences into padded id batches.

use crate::{Error, Result};

/// Longest token sequence (sentence-transformers' `max_seq_length` for all-MiniLM-L6-v2).
pub const MAX_SEQ_LEN: usize = 256;

/// A padded batch: `rows × len` token ids and a 0/1 attention mask.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    /// Sentences.
    pub rows: usize,
    /// Padded length.
    pub len: usize,
    /// Token ids, row-major.
    pub ids: Vec<u32>,
    /// 1 for real tokens, 0 for padding.
    pub mask: Vec<u32>,
}

/// A WordPiece tokenizer from a `tokenizer.json`, with the file's own padding disabled and
/// truncation at [`MAX_SEQ_LEN`].
pub struct SentenceTokenizer {
    inner: tokenizers::Tokenizer,
}

impl SentenceTokenizer {
    /// Loads `tokenizer.json` bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut inner = tokenizers::Tokenizer::from_bytes(bytes)
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        inner.with_padding(None);
        inner
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: MAX_SEQ_LEN,
                ..Default::default()
            }))
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        Ok(Self { inner })
    }

    /// Tokenises sentences (with `[CLS]`/`[SEP]`) and pads to the longest with id 0.
    pub fn batch(&self, sentences: &[String]) -> Result<Batch> {
        let encodings = self.encode_all(sentences)?;
        Ok(Batch::pad(&encodings.iter().collect::<Vec<_>>()))
    }

    /// Token ids (with `[CLS]`/`[SEP]`) of each sentence.
    pub fn encode_all(&self, sentences: &[String]) -> Result<Vec<Vec<u32>>> {
        sentences
            .iter()
            .map(|s| {
                self.inner
                    .encode(s.as_str(), true)
                    .map(|e| e.get_ids().to_vec())
                    .map_err(|e| Error::Tokenizer(e.to_string()))
            })
            .collect()
    }
}

impl Batch {
    /// Pads token sequences to the longest with id 0.
    pub fn pad(encodings: &[&Vec<u32>]) -> Batch {
        let len = encodings.iter().map(|e| e.len()).max().unwrap_or(0).max(1);
        let mut batch = Batch {
            rows: encodings.len(),
            len,
            ids: Vec::new(),
            mask: Vec::new(),
        };
        for e in encodings {
            batch
                .ids
                .extend(e.iter().copied().chain(std::iter::repeat(0)).take(len));
            batch.mask.extend((0..len).map(|i| u32::from(i < e.len())));
        }
        batch
    }
}
