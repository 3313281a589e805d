//! Decoder generation jobs.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use gpuchain_jobspec::{
    BlobHash, BlobRef, GenerationSpec, InferenceSpec, JobKind, LlamaShape, ModelArch,
};

use super::generate::{end_at_stops, generate_at, generated_len};
use super::model::LlamaConfig;
use super::prompts::{input_is_text, read_prompts};
use super::rows::RowDecoder;
use crate::blob::BlobStore;
use crate::gguf::llama::GgufWeights;
use crate::gguf::{ChatTemplate, Gguf};
use crate::params::Params;
use crate::tensor_io::{decode, encode_u32, Tensor};
use crate::{Backend, Error, JobOutput, Result};

/// A decoder job's parts, checked: its shape and generation settings, the prompts (one id
/// row each, see [`super::prompts`]) and the weights file.
pub(super) struct Loaded<'a> {
    pub(super) shape: LlamaShape,
    /// The decoder: the shape, and for a GGUF file its head size and rope scaling.
    pub(super) cfg: LlamaConfig,
    pub(super) gen: &'a GenerationSpec,
    pub(super) prompts: Vec<Vec<u32>>,
    gguf: bool,
    /// The weights file, unless a kept model answered for it.
    weights: Option<Vec<u8>>,
    /// The GGUF model kept from an earlier job of the same weights.
    kept: Option<Arc<KeptModel>>,
    /// The chat template this job's text prompts were read with.
    chat: Option<Arc<ChatTemplate>>,
    store: &'a BlobStore,
    blob: &'a BlobRef,
}

/// A GGUF model as CPU decoder jobs use it: a provider or verifier working through jobs of
/// one model reads and checks its weights blob and builds its row decoder once (the two
/// were a third of checking a 128-token answer as a job), and its chat template once.
pub(super) struct KeptModel {
    shape: LlamaShape,
    cfg: LlamaConfig,
    decoder: Arc<RowDecoder>,
    chat: OnceLock<Arc<ChatTemplate>>,
}

/// The last GGUF model a CPU job ran or checked, by its weights blob's hash (the bytes the
/// store checked: the same hash, the same model). One model is kept, the last.
static LAST_MODEL: Mutex<Option<(BlobHash, Arc<KeptModel>)>> = Mutex::new(None);

fn kept_model(hash: &BlobHash) -> Option<Arc<KeptModel>> {
    let last = LAST_MODEL.lock().ok()?;
    last.as_ref()
        .filter(|(h, _)| h == hash)
        .map(|(_, m)| Arc::clone(m))
}

/// Forgets the prompts the kept model's checks have read (a benchmark's check of prompts
/// never seen; see `forced.rs`).
pub fn forget_checked_prompts() {
    if let Ok(last) = LAST_MODEL.lock() {
        if let Some((_, kept)) = last.as_ref() {
            kept.decoder.forget_checked_prompts();
        }
    }
}

impl KeptModel {
    /// Its chat template, built from the weights blob by the first job with text prompts.
    fn chat(&self, store: &BlobStore, blob: &BlobRef) -> Result<Arc<ChatTemplate>> {
        if let Some(chat) = self.chat.get() {
            return Ok(Arc::clone(chat));
        }
        let chat = Arc::new(ChatTemplate::of(&Gguf::parse(&store.get(blob)?)?)?);
        let _ = self.chat.set(Arc::clone(&chat));
        Ok(chat)
    }
}

impl Loaded<'_> {
    /// The weights file's bytes: as read, or read again.
    fn weights(&self) -> Result<std::borrow::Cow<'_, [u8]>> {
        Ok(match &self.weights {
            Some(w) => std::borrow::Cow::Borrowed(w.as_slice()),
            None => std::borrow::Cow::Owned(self.store.get(self.blob)?),
        })
    }

    /// The weights as f32 (burn's decoder).
    pub(super) fn params(&self) -> Result<Params> {
        let weights = self.weights()?;
        if self.gguf {
            crate::gguf::llama::params(&Gguf::parse(&weights)?, &self.shape)
        } else {
            Params::from_safetensors(&weights)
        }
    }

    /// The row decoder, with a GGUF file's quantised blocks kept as they are (a GGUF
    /// model's built once and kept for the next job of it).
    pub(super) fn row_decoder(&self) -> Result<Arc<RowDecoder>> {
        if let Some(kept) = &self.kept {
            return Ok(Arc::clone(&kept.decoder));
        }
        let weights = self.weights()?;
        if !self.gguf {
            return Ok(Arc::new(RowDecoder::new(
                self.cfg.clone(),
                &Params::from_safetensors(&weights)?,
            )?));
        }
        let file = Gguf::parse(&weights)?;
        let decoder = Arc::new(RowDecoder::new(
            self.cfg.clone(),
            &GgufWeights::new(&file, &self.shape)?,
        )?);
        let kept = KeptModel {
            shape: self.shape.clone(),
            cfg: self.cfg.clone(),
            decoder: Arc::clone(&decoder),
            chat: OnceLock::new(),
        };
        if let Some(chat) = &self.chat {
            let _ = kept.chat.set(Arc::clone(chat));
        }
        if let Ok(mut last) = LAST_MODEL.lock() {
            *last = Some((self.blob.hash(), Arc::new(kept)));
        }
        Ok(decoder)
    }

    /// The rows of the prompts, in batches of `batch` and within a batch by prompt length:
    /// burn's decoder takes rows of one length at a time. A row's place in its batch,
    /// `row % batch`, seeds its sampler stream.
    pub(super) fn same_length_groups(&self, batch: usize) -> Vec<Vec<usize>> {
        let batch = batch.max(1);
        let mut groups = Vec::new();
        for (b, chunk) in self.prompts.chunks(batch).enumerate() {
            let mut by_len: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
            for (i, p) in chunk.iter().enumerate() {
                by_len.entry(p.len()).or_default().push(b * batch + i);
            }
            groups.extend(by_len.into_values());
        }
        groups
    }
}

/// Reads and checks a decoder job's input and weights: safetensors with the spec's shape
/// (`LlamaDecoder`), or a GGUF file with its own (`LlamaGguf`).
pub(super) fn load<'a>(s: &'a InferenceSpec, store: &'a BlobStore) -> Result<Loaded<'a>> {
    let gguf = s.arch == ModelArch::LlamaGguf;
    // A GGUF model kept from an earlier job answers for its blob, which is then not read.
    let kept = if gguf {
        kept_model(&s.weights.hash())
    } else {
        None
    };
    let weights = match kept {
        Some(_) => None,
        None => Some(store.get(&s.weights)?),
    };
    let file = match (&weights, gguf) {
        (Some(w), true) => Some(Gguf::parse(w)?),
        _ => None,
    };
    let shape = match (&kept, &file) {
        (Some(k), _) => k.shape.clone(),
        (None, Some(f)) => crate::gguf::llama::shape(f)?,
        (None, None) => s
            .llama
            .clone()
            .ok_or_else(|| Error::BadInput("decoder jobs need a llama shape".into()))?,
    };
    let gen = s
        .generation
        .as_ref()
        .ok_or_else(|| Error::BadInput("decoder jobs need generation settings".into()))?;
    let cfg = match (&kept, &file) {
        (Some(k), _) => k.cfg.clone(),
        (None, Some(f)) => crate::gguf::llama::config(f)?,
        (None, None) => LlamaConfig::from_shape(&shape),
    };
    let input = store.get(&s.input)?;
    // Text prompts are read with the GGUF file's own chat template and tokenizer.
    let chat = match (input_is_text(&input), &kept, &file) {
        (true, Some(k), _) => Some(k.chat(store, &s.weights)?),
        (true, None, Some(f)) => Some(Arc::new(ChatTemplate::of(f)?)),
        _ => None,
    };
    let prompts = read_prompts(&input, chat.as_deref())?;
    drop(file);
    if let Some(t) = gen.stop_tokens.iter().find(|t| **t >= shape.vocab_size) {
        return Err(Error::BadInput(format!(
            "stop token {t} is outside the vocabulary of {}",
            shape.vocab_size
        )));
    }
    if let Some(t) = prompts.iter().flatten().find(|t| **t >= shape.vocab_size) {
        return Err(Error::BadInput(format!(
            "token id {t} is outside the vocabulary of {}",
            shape.vocab_size
        )));
    }
    let longest = prompts.iter().map(Vec::len).max().unwrap_or(0);
    if longest + gen.max_new_tokens as usize > shape.max_seq_len as usize {
        return Err(Error::BadInput(format!(
            "prompt ({longest}) plus new tokens ({}) exceed max_seq_len {}",
            gen.max_new_tokens, shape.max_seq_len
        )));
    }
    Ok(Loaded {
        shape,
        cfg,
        gen,
        prompts,
        gguf,
        weights,
        kept,
        chat,
        store,
        blob: &s.weights,
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
    let gen = job.gen;
    let new = gen.max_new_tokens as usize;
    let batch = (s.batch_size as usize).max(1);
    let mut out = Vec::new();
    if burn_backend(backend) == Backend::Cpu {
        // Decoding reads every weight once a token: on the CPU that is a matrix-vector
        // product per projection, which the row decoder does without burn's GEMM packing.
        // Chunked by the batch size like the burn path: a row's sampler stream is seeded by
        // its index within its batch.
        let decoder = job.row_decoder()?;
        for chunk in job.prompts.chunks(batch) {
            let rows: Vec<&[u32]> = chunk.iter().map(Vec::as_slice).collect();
            out.extend(decoder.generate_rows(&rows, new, &gen.sampling, &gen.stop_tokens));
        }
    } else {
        out = vec![0; job.prompts.len() * new];
        crate::with_burn_backend!(burn_backend(backend), |B, device| {
            let model = job.cfg.load::<B>(&job.params()?, &device)?;
            for group in job.same_length_groups(batch) {
                let prompts: Vec<u32> = group
                    .iter()
                    .flat_map(|&row| job.prompts[row].iter().copied())
                    .collect();
                let in_batch: Vec<usize> = group.iter().map(|row| row % batch).collect();
                let got = generate_at(
                    &model,
                    &prompts,
                    &in_batch,
                    new,
                    &gen.sampling,
                    true,
                    &device,
                );
                for (&row, answer) in group.iter().zip(got.chunks(new.max(1))) {
                    out[row * new..(row + 1) * new].copy_from_slice(answer);
                }
            }
            Ok::<(), Error>(())
        })?;
        end_at_stops(&mut out, new, &gen.stop_tokens);
    }
    Ok(JobOutput::new(
        JobKind::Tokens,
        encode_u32(&[job.prompts.len(), new], &out),
        None,
    ))
}

/// The answers of a GGUF job whose input is text, as text: each row's tokens up to its first
/// stop token (or the file's end of sequence), without control tokens. `None` for a job
/// whose input is token ids, whose reader has the tokenizer of its own choice.
pub fn answer_texts(
    s: &InferenceSpec,
    store: &BlobStore,
    output: &[u8],
) -> Result<Option<Vec<String>>> {
    if s.arch != ModelArch::LlamaGguf || !input_is_text(&store.get(&s.input)?) {
        return Ok(None);
    }
    let weights = store.get(&s.weights)?;
    let file = Gguf::parse(&weights)?;
    let tokenizer = crate::gguf::tokenizer::tokenizer(&file)?;
    let new = s
        .generation
        .as_ref()
        .map_or(0, |g| g.max_new_tokens as usize);
    let stops = s
        .generation
        .as_ref()
        .map(|g| g.stop_tokens.clone())
        .unwrap_or_default();
    let tokens = match decode(output)? {
        Tensor::U32 { dims, data } if dims.len() == 2 && dims[1] == new => data,
        _ => {
            return Err(Error::BadInput(
                "the output is not the job's u32 [n, max_new_tokens] token ids".into(),
            ))
        }
    };
    tokens
        .chunks(new.max(1))
        .map(|row| {
            let turn = &row[..generated_len(row, &stops)];
            let turn = match turn.split_last() {
                Some((last, rest)) if stops.contains(last) => rest,
                _ => turn,
            };
            crate::gguf::answer_text(&file, &tokenizer, turn)
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}
