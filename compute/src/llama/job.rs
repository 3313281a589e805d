//! Decoder generation jobs.

use gpuchain_jobspec::{GenerationSpec, InferenceSpec, JobKind, LlamaShape, ModelArch};

use super::generate::generate;
use super::model::LlamaConfig;
use super::rows::RowDecoder;
use crate::blob::BlobStore;
use crate::gguf::Gguf;
use crate::params::Params;
use crate::tensor_io::{decode, encode_u32, Tensor};
use crate::{Backend, Error, JobOutput, Result};

/// A decoder job's parts, checked: its shape and generation settings, the prompts
/// (`dims = [n, prompt_len]`) and the weights.
pub(super) struct Loaded<'a> {
    pub(super) shape: LlamaShape,
    pub(super) gen: &'a GenerationSpec,
    pub(super) dims: Vec<usize>,
    pub(super) prompts: Vec<u32>,
    pub(super) params: Params,
}

/// Reads and checks a decoder job's input and weights: safetensors with the spec's shape
/// (`LlamaDecoder`), or a GGUF file with its own (`LlamaGguf`).
pub(super) fn load<'a>(s: &'a InferenceSpec, store: &BlobStore) -> Result<Loaded<'a>> {
    let weights = store.get(&s.weights)?;
    let (shape, params) = if s.arch == ModelArch::LlamaGguf {
        let file = Gguf::parse(&weights)?;
        let shape = crate::gguf::llama::shape(&file)?;
        let params = crate::gguf::llama::params(&file, &shape)?;
        (shape, params)
    } else {
        let shape = s
            .llama
            .clone()
            .ok_or_else(|| Error::BadInput("decoder jobs need a llama shape".into()))?;
        (shape, Params::from_safetensors(&weights)?)
    };
    let gen = s
        .generation
        .as_ref()
        .ok_or_else(|| Error::BadInput("decoder jobs need generation settings".into()))?;
    let (dims, prompts) = match decode(&store.get(&s.input)?)? {
        Tensor::U32 { dims, data } if dims.len() == 2 && dims[0] > 0 && dims[1] > 0 => (dims, data),
        Tensor::U32 { dims, .. } => {
            return Err(Error::BadInput(format!(
                "decoder input must be u32 [n, prompt_len] with n, prompt_len ≥ 1, got {dims:?}"
            )))
        }
        Tensor::F32 { .. } => {
            return Err(Error::BadInput(
                "decoder input must be u32 token ids, got f32".into(),
            ))
        }
    };
    if let Some(t) = prompts.iter().find(|t| **t >= shape.vocab_size) {
        return Err(Error::BadInput(format!(
            "token id {t} is outside the vocabulary of {}",
            shape.vocab_size
        )));
    }
    let total = dims[1] + gen.max_new_tokens as usize;
    if total > shape.max_seq_len as usize {
        return Err(Error::BadInput(format!(
            "prompt ({}) plus new tokens ({}) exceed max_seq_len {}",
            dims[1], gen.max_new_tokens, shape.max_seq_len
        )));
    }
    Ok(Loaded {
        shape,
        gen,
        dims,
        prompts,
        params,
    })
}

/// The burn backend a decoder job runs on: the canonical backend runs it on the CPU
/// backend, since token agreement, not bit equality, is the decoder's tolerance.
pub(super) fn burn_backend(backend: Backend) -> Backend {
    if backend == Backend::Canonical {
        Backend::Cpu
    } else {
        backend
    }
}

/// Runs a generation job (burn backends; see [`burn_backend`]).
pub fn run_job(s: &InferenceSpec, store: &BlobStore, backend: Backend) -> Result<JobOutput> {
    let Loaded {
        shape,
        gen,
        dims,
        prompts,
        params,
    } = load(s, store)?;
    let cfg = LlamaConfig::from_shape(&shape);
    let batch = (s.batch_size as usize).max(1);
    let mut out = Vec::new();
    if burn_backend(backend) == Backend::Cpu {
        // Decoding reads every weight once a token: on the CPU that is a matrix-vector
        // product per projection, which the row decoder does without burn's GEMM packing.
        // Chunked by the batch size like the burn path: a row's sampler stream is seeded by
        // its index within its batch.
        let decoder = RowDecoder::new(cfg, &params)?;
        for chunk in prompts.chunks(batch * dims[1]) {
            let rows = chunk.len() / dims[1];
            out.extend(decoder.generate(chunk, rows, gen.max_new_tokens as usize, &gen.sampling));
        }
        return Ok(JobOutput::new(
            JobKind::Tokens,
            encode_u32(&[dims[0], gen.max_new_tokens as usize], &out),
            None,
        ));
    }
    crate::with_burn_backend!(burn_backend(backend), |B, device| {
        let model = cfg.load::<B>(&params, &device)?;
        for chunk in prompts.chunks(batch * dims[1]) {
            let rows = chunk.len() / dims[1];
            out.extend(generate(
                &model,
                chunk,
                rows,
                gen.max_new_tokens as usize,
                &gen.sampling,
                true,
                &device,
            ));
        }
        Ok::<(), Error>(())
    })?;
    Ok(JobOutput::new(
        JobKind::Tokens,
        encode_u32(&[dims[0], gen.max_new_tokens as usize], &out),
        None,
    ))
}
