//! Embedding jobs.

use gpuchain_jobspec::{InferenceSpec, JobKind};

use super::cpu::CpuEncoder;
use super::model::BertConfig;
use super::tokenize::{Batch, SentenceTokenizer};
use crate::blob::BlobStore;
use crate::params::Params;
use crate::tensor_io::encode_f32;
use crate::{canonical, Backend, Error, JobOutput, Result};

/// Most sentences in one job input.
pub const MAX_SENTENCES: usize = 1 << 20;

/// Parses the job input: a JSON array of strings.
pub fn decode_sentences(bytes: &[u8]) -> Result<Vec<String>> {
    let s: Vec<String> = serde_json::from_slice(bytes).map_err(|e| {
        Error::BadInput(format!(
            "embedder input must be a JSON array of strings: {e}"
        ))
    })?;
    if s.is_empty() || s.len() > MAX_SENTENCES {
        return Err(Error::BadInput(format!(
            "embedder input has {} sentences; allowed 1..={MAX_SENTENCES}",
            s.len()
        )));
    }
    Ok(s)
}

/// Runs `embed_batch` over `ids` in batches of `batch_size` sentences of similar length
/// (longest first, to waste little work on padding, as sentence-transformers does) and puts
/// its `[rows, hidden]` results back in input order.
pub(super) fn by_length(
    ids: &[Vec<u32>],
    batch_size: usize,
    hidden: usize,
    mut embed_batch: impl FnMut(&Batch) -> Result<Vec<f32>>,
) -> Result<Vec<f32>> {
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by(|a, b| ids[*b].len().cmp(&ids[*a].len()).then(a.cmp(b)));
    let mut out = vec![0.0f32; ids.len() * hidden];
    for chunk in order.chunks(batch_size.max(1)) {
        let rows = embed_batch(&Batch::pad(
            &chunk.iter().map(|i| &ids[*i]).collect::<Vec<_>>(),
        ))?;
        for (j, i) in chunk.iter().enumerate() {
            out[i * hidden..(i + 1) * hidden].copy_from_slice(&rows[j * hidden..(j + 1) * hidden]);
        }
    }
    Ok(out)
}

/// Embeds sentences in batches; returns `[n, hidden]` row-major unit vectors.
pub fn embed(
    params: &Params,
    tok: &SentenceTokenizer,
    sentences: &[String],
    batch_size: usize,
    backend: Backend,
) -> Result<Vec<f32>> {
    let cfg = BertConfig::new();
    let ids = tok.encode_all(sentences)?;
    if backend == Backend::Canonical {
        return by_length(&ids, batch_size, cfg.hidden, |batch| {
            canonical::bert::embed(params, &cfg, batch)
        });
    }
    if backend == Backend::Cpu {
        return CpuEncoder::load(params, &cfg)?.embed_all(&ids, batch_size);
    }
    crate::with_burn_backend!(backend, |B, device| {
        let model = cfg.load::<B>(params, &device)?;
        by_length(&ids, batch_size, cfg.hidden, |batch| {
            Ok(crate::models::burn_io::values(
                model.forward(batch, &device),
            ))
        })
    })
}

/// Runs an embedding job.
pub fn run_job(s: &InferenceSpec, store: &BlobStore, backend: Backend) -> Result<JobOutput> {
    let sentences = decode_sentences(&store.get(&s.input)?)?;
    let tok_blob = s
        .tokenizer
        .as_ref()
        .ok_or_else(|| Error::BadInput("embedder jobs need a tokenizer blob".into()))?;
    let tok = SentenceTokenizer::from_bytes(&store.get(tok_blob)?)?;
    let params = Params::from_safetensors(&store.get(&s.weights)?)?;
    let y = embed(&params, &tok, &sentences, s.batch_size as usize, backend)?;
    Ok(JobOutput::new(
        JobKind::Embeddings,
        encode_f32(&[sentences.len(), BertConfig::new().hidden], &y),
        None,
    ))
}
