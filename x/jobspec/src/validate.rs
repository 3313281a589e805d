//! Stateless validation of job specs against [`crate::limits`].

use crate::limits::*;
use crate::{
    BlobRef, InferenceSpec, JobKind, JobSpec, LlamaShape, ModelArch, Result, SpecError, Tolerance,
    TrainingSpec, WeightsInit, PPM,
};

impl JobSpec {
    /// Checks sizes, counts and cross-field rules. Pure; suitable for `check_stateless`.
    pub fn validate(&self) -> Result<()> {
        match self {
            JobSpec::Inference(s) => validate_inference(s)?,
            JobSpec::Training(s) => validate_training(s)?,
        }
        let custom = match self {
            JobSpec::Inference(s) => s.tolerance.as_ref(),
            JobSpec::Training(s) => s.tolerance.as_ref(),
        };
        match custom {
            Some(t) => validate_tolerance(t, self.kind()),
            None => Ok(()),
        }
    }
}

/// A client may loosen a tolerance, never tighten it below the calibrated cross-backend
/// default of its job kind: honest providers on another backend differ by up to that much,
/// and a stricter rule would make their honest work a fault the client profits from.
fn validate_tolerance(t: &Tolerance, kind: JobKind) -> Result<()> {
    let floor = Tolerance::default_for(kind);
    let kind = kind.name();
    let too_strict = |field, value, limit| SpecError::ToleranceTooStrict {
        field,
        value,
        limit,
        kind,
    };
    if t.rel_l2_ppm_max < floor.rel_l2_ppm_max {
        return Err(too_strict(
            "rel_l2_ppm_max",
            t.rel_l2_ppm_max,
            floor.rel_l2_ppm_max,
        ));
    }
    if t.agreement_ppm_min > floor.agreement_ppm_min {
        return Err(too_strict(
            "agreement_ppm_min",
            t.agreement_ppm_min,
            floor.agreement_ppm_min,
        ));
    }
    if t.cosine_ppm_min > floor.cosine_ppm_min {
        return Err(too_strict(
            "cosine_ppm_min",
            t.cosine_ppm_min,
            floor.cosine_ppm_min,
        ));
    }
    Ok(())
}

fn check_blob(role: &'static str, blob: &BlobRef, max: u64) -> Result<()> {
    if blob.size == 0 {
        return Err(SpecError::EmptyBlob(role));
    }
    if blob.size > max {
        return Err(SpecError::BlobTooLarge {
            role,
            size: blob.size,
            max,
        });
    }
    if blob.urls.len() > MAX_URLS_PER_BLOB {
        return Err(SpecError::TooManyUrls {
            role,
            count: blob.urls.len(),
            max: MAX_URLS_PER_BLOB,
        });
    }
    for url in &blob.urls {
        let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
        if !scheme_ok || url.len() > MAX_URL_LEN_BYTES {
            return Err(SpecError::BadUrl {
                role,
                url: url.clone(),
            });
        }
    }
    Ok(())
}

fn range(field: &'static str, value: u64, min: u64, max: u64) -> Result<()> {
    if value < min || value > max {
        return Err(SpecError::OutOfRange {
            field,
            value,
            min,
            max,
        });
    }
    Ok(())
}

fn validate_inference(s: &InferenceSpec) -> Result<()> {
    check_blob("weights", &s.weights, MAX_WEIGHTS_BYTES)?;
    check_blob("input", &s.input, MAX_INPUT_BYTES)?;
    range("batch_size", s.batch_size.into(), 1, MAX_BATCH_SIZE.into())?;
    let reads_sentences = matches!(
        s.arch,
        ModelArch::MiniLmEmbedder | ModelArch::MiniLmClassifier
    );
    match &s.tokenizer {
        Some(t) => {
            if !reads_sentences {
                return Err(SpecError::NotApplicable {
                    field: "tokenizer",
                    arch: ModelArch::MiniLmEmbedder,
                });
            }
            check_blob("tokenizer", t, MAX_TOKENIZER_BYTES)?;
        }
        None if reads_sentences => {
            return Err(SpecError::MissingBlob {
                arch: s.arch,
                role: "tokenizer",
            });
        }
        None => {}
    }
    let is_llama = s.arch == ModelArch::LlamaDecoder;
    let generates = is_llama || s.arch == ModelArch::LlamaGguf;
    match (&s.llama, is_llama) {
        (Some(shape), true) => validate_llama(shape)?,
        (None, true) => {
            return Err(SpecError::MissingBlob {
                arch: s.arch,
                role: "llama shape",
            })
        }
        (Some(_), false) => {
            return Err(SpecError::NotApplicable {
                field: "llama",
                arch: ModelArch::LlamaDecoder,
            })
        }
        (None, false) => {}
    }
    match (&s.generation, generates) {
        (Some(g), true) => {
            range(
                "max_new_tokens",
                g.max_new_tokens.into(),
                1,
                MAX_NEW_TOKENS.into(),
            )?;
            if let crate::Sampling::Seeded {
                temperature_milli,
                top_k,
                top_p_ppm,
                ..
            } = g.sampling
            {
                range("temperature_milli", temperature_milli.into(), 1, 100_000)?;
                range("top_k", top_k.into(), 1, MAX_VOCAB.into())?;
                range("top_p_ppm", top_p_ppm.into(), 1, 1_000_000)?;
            }
            range(
                "stop_tokens",
                g.stop_tokens.len() as u64,
                0,
                MAX_STOP_TOKENS as u64,
            )?;
            let vocab = s.llama.as_ref().map_or(MAX_VOCAB, |l| l.vocab_size);
            if let Some(t) = g.stop_tokens.iter().find(|t| **t >= vocab) {
                range(
                    "stop token",
                    (*t).into(),
                    0,
                    u64::from(vocab).saturating_sub(1),
                )?;
            }
        }
        (None, true) => {
            return Err(SpecError::MissingBlob {
                arch: s.arch,
                role: "generation",
            })
        }
        (Some(_), false) => {
            return Err(SpecError::NotApplicable {
                field: "generation",
                arch: ModelArch::LlamaDecoder,
            })
        }
        (None, false) => {}
    }
    Ok(())
}

// `is_multiple_of` needs Rust 1.87; the workspace's rust-version is 1.85.
#[allow(clippy::manual_is_multiple_of)]
fn validate_llama(l: &LlamaShape) -> Result<()> {
    range("llama.vocab_size", l.vocab_size.into(), 2, MAX_VOCAB.into())?;
    range(
        "llama.hidden_size",
        l.hidden_size.into(),
        2,
        MAX_HIDDEN.into(),
    )?;
    range(
        "llama.intermediate_size",
        l.intermediate_size.into(),
        1,
        (4 * MAX_HIDDEN).into(),
    )?;
    range(
        "llama.num_layers",
        l.num_layers.into(),
        1,
        MAX_LAYERS.into(),
    )?;
    range("llama.num_heads", l.num_heads.into(), 1, 1024)?;
    range(
        "llama.num_kv_heads",
        l.num_kv_heads.into(),
        1,
        l.num_heads.into(),
    )?;
    range(
        "llama.max_seq_len",
        l.max_seq_len.into(),
        1,
        MAX_SEQ_LEN.into(),
    )?;
    range("llama.rope_theta", l.rope_theta.into(), 1, 100_000_000)?;
    range(
        "llama.rms_norm_eps_ppb",
        l.rms_norm_eps_ppb.into(),
        1,
        1_000_000,
    )?;
    if l.num_heads.checked_rem(l.num_kv_heads) != Some(0) {
        return Err(SpecError::BadLlamaShape(
            "num_kv_heads must divide num_heads",
        ));
    }
    if l.hidden_size.checked_rem(l.num_heads) != Some(0) {
        return Err(SpecError::BadLlamaShape(
            "num_heads must divide hidden_size",
        ));
    }
    if l.hidden_size
        .checked_div(l.num_heads)
        .unwrap_or(1)
        .checked_rem(2)
        != Some(0)
    {
        return Err(SpecError::BadLlamaShape("head size must be even for RoPE"));
    }
    Ok(())
}

fn validate_training(s: &TrainingSpec) -> Result<()> {
    match (s.arch, &s.init) {
        (ModelArch::DigitsMlp, _) | (ModelArch::MiniLmClassifier, WeightsInit::Blob(_)) => {}
        (arch @ ModelArch::MiniLmClassifier, WeightsInit::Seed(_)) => {
            return Err(SpecError::NeedsPretrainedWeights { arch })
        }
        (arch, _) => {
            return Err(SpecError::UnsupportedArch {
                arch,
                kind: "training",
            })
        }
    }
    if let WeightsInit::Blob(b) = &s.init {
        check_blob("weights", b, MAX_WEIGHTS_BYTES)?;
    }
    check_blob("dataset", &s.dataset, MAX_DATASET_BYTES)?;
    range("workers", s.workers.into(), 1, MAX_WORKERS.into())?;
    range("rounds", s.rounds.into(), 1, MAX_ROUNDS.into())?;
    range(
        "local_steps",
        s.local_steps.into(),
        1,
        MAX_LOCAL_STEPS.into(),
    )?;
    range("batch_size", s.batch_size.into(), 1, MAX_TRAIN_BATCH.into())?;
    range("lr_ppm", s.lr_ppm.into(), 1, (10 * PPM).into())?;
    range("momentum_ppm", s.momentum_ppm.into(), 0, (PPM - 1).into())?;
    range("topk_ppm", s.topk_ppm.into(), 1, PPM.into())?;
    range("warmup_rounds", s.warmup_rounds.into(), 0, s.rounds.into())?;
    if let Some(url) = &s.coordinator_url {
        let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
        if !scheme_ok || url.len() > MAX_URL_LEN_BYTES {
            return Err(SpecError::BadUrl {
                role: "coordinator",
                url: url.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
