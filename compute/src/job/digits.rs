//! Digits MLP/CNN inference. Input: `GCT1` f32 `[n, 64]` pixel counts 0..=16. Output:
//! `GCT1` f32 `[n, 10]` logits.

use gpuchain_jobspec::{InferenceSpec, JobKind, ModelArch};

use crate::blob::BlobStore;
use crate::models::{cnn::DigitsCnn, mlp::DigitsMlp};
use crate::params::Params;
use crate::tensor_io::{decode, encode_f32, Tensor};
use crate::{canonical, Backend, Error, JobOutput, Result};

/// Decodes the input: `[n, 64]` counts 0..=16, scaled by 1/16 (exact).
pub(crate) fn decode_pixels(bytes: &[u8]) -> Result<(Vec<f32>, usize)> {
    match decode(bytes)? {
        Tensor::F32 { dims, data } if dims.len() == 2 && dims[1] == 64 && dims[0] > 0 => {
            if let Some(v) = data.iter().find(|v| !(0.0..=16.0).contains(*v)) {
                return Err(Error::BadInput(format!(
                    "pixel value {v} is outside 0..=16"
                )));
            }
            Ok((data.iter().map(|v| v / 16.0).collect(), dims[0]))
        }
        Tensor::F32 { dims, .. } => Err(Error::BadInput(format!(
            "digits input must be f32 [n, 64] with n ≥ 1, got {dims:?}"
        ))),
        Tensor::U32 { .. } => Err(Error::BadInput("digits input must be f32, got u32".into())),
    }
}

/// Digits logits `[rows, 10]` on any backend, in batches of `batch` rows (pixels in 0..=1).
pub fn logits(
    arch: ModelArch,
    p: &Params,
    x: &[f32],
    rows: usize,
    batch: usize,
    backend: Backend,
) -> Result<Vec<f32>> {
    if !matches!(arch, ModelArch::DigitsMlp | ModelArch::DigitsCnn) {
        return Err(Error::Unsupported {
            arch,
            what: "digits inference",
        });
    }
    if backend == Backend::Canonical {
        return match arch {
            ModelArch::DigitsCnn => canonical::cnn::forward(p, x, rows),
            _ => canonical::mlp::forward(p, x, rows),
        };
    }
    if backend == Backend::Cpu && arch == ModelArch::DigitsCnn {
        return crate::models::cnn_cpu::logits(p, x, rows, batch);
    }
    crate::with_burn_backend!(backend, |B, device| {
        let net = match arch {
            ModelArch::DigitsCnn => Net::Cnn(Box::new(DigitsCnn::<B>::from_params(p, &device)?)),
            _ => Net::Mlp(Box::new(DigitsMlp::<B>::from_params(p, &device)?)),
        };
        let mut out = Vec::with_capacity(rows * 10);
        for start in (0..rows).step_by(batch.max(1)) {
            let n = batch.min(rows - start);
            let xb = crate::models::burn_io::tensor::<B, 2>(
                x[start * 64..(start + n) * 64].to_vec(),
                [n, 64],
                &device,
            );
            out.extend(crate::models::burn_io::values(net.forward(xb)));
        }
        Ok(out)
    })
}

/// A loaded digits model.
enum Net<B: burn::prelude::Backend> {
    Mlp(Box<DigitsMlp<B>>),
    Cnn(Box<DigitsCnn<B>>),
}

impl<B: burn::prelude::Backend> Net<B> {
    /// `[n, 64]` → `[n, 10]`.
    fn forward(&self, x: burn::prelude::Tensor<B, 2>) -> burn::prelude::Tensor<B, 2> {
        match self {
            Net::Mlp(m) => m.forward(x),
            Net::Cnn(c) => c.forward(x),
        }
    }
}

pub(super) fn run(s: &InferenceSpec, store: &BlobStore, backend: Backend) -> Result<JobOutput> {
    let (x, rows) = decode_pixels(&store.get(&s.input)?)?;
    let params = Params::from_safetensors(&store.get(&s.weights)?)?;
    let y = logits(s.arch, &params, &x, rows, s.batch_size as usize, backend)?;
    Ok(JobOutput::new(
        JobKind::Logits,
        encode_f32(&[rows, 10], &y),
        None,
    ))
}
