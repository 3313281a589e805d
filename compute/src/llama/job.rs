//! Decoder generation jobs.

use gpuchain_jobspec::{GenerationSpec, InferenceSpec, JobKind, LlamaShape, ModelArch};

use super::generate::{end_at_stops, generate};
use super::model::LlamaConfig;
use super::rows::RowDecoder;
use crate::blob::BlobStore;
use crate::gguf::llama::GgufWeights;
use crate::gguf::Gguf;
use crate::params::Params;
use crate::tensor_io::{decode, encode_u32, Tensor};
use crate::{Backend, Error, JobOutput, Result};

/// A decoder job's parts, checked: its shape and generation settings, the prompts
/// (`dims = [n, prompt_len]`) and the weights file.
pub(super) struct Loaded<'a> {
    pub(super) shape: LlamaShape,
    pub(super) gen: &'a GenerationSpec,
    pub(super) dims: Vec<usize>,
    pub(super) prompts: Vec<u32>,
    gguf: bool,
    weights: Vec<u8>,
}

impl Loaded<'_> {
    /// The weights as f32 (burn's decoder).
    pub(super) fn params(&self) -> Result<Params> {
        if self.gguf {
            crate::gguf::llama::params(&Gguf::parse(&self.weights)?, &self.shape)
        } else {
            Params::from_safetensors(&self.weights)
        }
    }

    /// The row decoder, with a GGUF file's quantised blocks kept as they are.
    pub(super) fn row_decoder(&self) -> Result<RowDecoder> {
        let cfg = LlamaConfig::from_shape(&self.shape);
        if self.gguf {
            let file = Gguf::parse(&self.weights)?;
            RowDecoder::new(cfg, &GgufWeights::new(&file, &self.shape))
        } else {
            RowDecoder::new(cfg, &Params::from_safetensors(&self.weights)?)
        }
    }
}

/// Reads and checks a decoder job's input and weights: safetensors with the spec's shape
/// (`LlamaDecoder`), or a GGUF file with its own (`LlamaGguf`).
pub(super) fn load<'a>(s: &'a InferenceSpec, store: &BlobStore) -> Result<Loaded<'a>> {
    let weights = store.get(&s.weights)?;
    let gguf = s.arch == ModelArch::LlamaGguf;
    let shape = if gguf {
        crate::gguf::llama::shape(&Gguf::parse(&weights)?)?
    } else {
        s.llama
            .clone()
            .ok_or_else(|| Error::BadInput("decoder jobs need a llama shape".into()))?
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
    if let Some(t) = gen.stop_tokens.iter().find(|t| **t >= shape.vocab_size) {
        return Err(Error::BadInput(format!(
            "stop token {t} is outside the vocabulary of {}",
            shape.vocab_size
        )));
    }
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
        gguf,
        weights,
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
    let job = load(s, store)?;
    let (gen, dims, prompts) = (job.gen, &job.dims, &job.prompts);
    let cfg = LlamaConfig::from_shape(&job.shape);
    let batch = (s.batch_size as usize).max(1);
    let mut out = Vec::new();
    if burn_backend(backend) == Backend::Cpu {
        // Decoding reads every weight once a token: on the CPU that is a matrix-vector
        // product per projection, which the row decoder does without burn's GEMM packing.
        // Chunked by the batch size like the burn path: a row's sampler stream is seeded by
        // its index within its batch.
        let decoder = job.row_decoder()?;
        for chunk in prompts.chunks(batch * dims[1]) {
            let rows = chunk.len() / dims[1];
            out.extend(decoder.generate_until(
                chunk,
                rows,
                gen.max_new_tokens as usize,
                &gen.sampling,
                &gen.stop_tokens,
            ));
        }
        return Ok(JobOutput::new(
            JobKind::Tokens,
            encode_u32(&[dims[0], gen.max_new_tokens as usize], &out),
            None,
        ));
    }
    crate::with_burn_backend!(burn_backend(backend), |B, device| {
        let model = cfg.load::<B>(&job.params()?, &device)?;
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
    end_at_stops(&mut out, gen.max_new_tokens as usize, &gen.stop_tokens);
    Ok(JobOutput::new(
        JobKind::Tokens,
        encode_u32(&[dims[0], gen.max_new_tokens as usize], &out),
        None,
    ))
}
