//! BERT-style sentence embedder with all-MiniLM-L6-v2's shape: WordPiece tokenizer
//! (`tokenizers`), 6 encoder layers of width 384 with 12 heads, mean pooling over real
//! tokens, L2 normalisation. Loads the real safetensors (HuggingFace BERT tensor names).
//!
//! Job input: a UTF-8 JSON array of strings. Output: `GCT1` f32 `[n, 384]`.

mod cpu;
mod loaded;
pub mod model;
pub mod tokenize;

mod job;

pub use cpu::{CpuEncoder, PackedStates};
pub use job::{decode_sentences, embed, run_job, MAX_SENTENCES};
pub use loaded::Embedder;
pub use model::{BertConfig, BertEmbedder};
pub use tokenize::{Batch, SentenceTokenizer};
