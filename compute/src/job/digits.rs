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
    if backend == Backend::Canonical {
        return match arch {
            ModelArch::DigitsCnn => canonical::cnn::forward(p, x, rows),
            _ => canonical::mlp::forward(p, x, rows),
        };
    }
    crate::with_burn_backend!(backend, |B, device| {
        let mut out = Vec::with_capacity(rows * 10);
        let mlp = if arch == ModelArch::DigitsMlp {
            Some(DigitsMlp::<B>::from_params(p, &device)?)
        } else {
            None
        };
        let cnn = if arch == ModelArch::DigitsCnn {
            Some(DigitsCnn::<B>::from_params(p, &device)?)
        } else {
            None
        };
        for start in (0..rows).step_by(batch.max(1)) {
            let n = batch.min(rows - start);
            let xb = crate::models::burn_io::tensor::<B, 2>(
                x[start * 64..(start + n) * 64].to_vec(),
                [n, 64],
                &device,
            );
            let y = match (&mlp, &cnn) {
                (Some(m), _) => m.forward(xb),
                (_, Some(c)) => c.forward(xb),
                _ => unreachable!("arch is a digits model"),
            };
            out.extend(crate::models::burn_io::values(y));
        }
        Ok(out)
    })
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
