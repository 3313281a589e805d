//! Named f32 tensors and their safetensors encoding — the neutral weight format shared by
//! the burn models and the canonical path. Linear weights use the PyTorch layout
//! `[out, in]`; conv weights `[out, in, kh, kw]`.

use std::collections::BTreeMap;

use crate::{Error, Result};

/// One named tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamTensor {
    /// Dims, outermost first.
    pub dims: Vec<usize>,
    /// Row-major values.
    pub data: Vec<f32>,
}

/// Named tensors in name order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params {
    /// Tensors by name.
    pub tensors: BTreeMap<String, ParamTensor>,
}

impl Params {
    /// Adds a tensor.
    pub fn insert(&mut self, name: impl Into<String>, dims: Vec<usize>, data: Vec<f32>) {
        debug_assert_eq!(dims.iter().product::<usize>(), data.len());
        self.tensors.insert(name.into(), ParamTensor { dims, data });
    }

    /// The tensor `name`, checked to have `dims`.
    pub fn get(&self, name: &str, dims: &[usize]) -> Result<&[f32]> {
        let t = self
            .tensors
            .get(name)
            .ok_or_else(|| Error::BadWeights(format!("missing tensor `{name}`")))?;
        if t.dims != dims {
            return Err(Error::BadWeights(format!(
                "tensor `{name}` has shape {:?}, expected {dims:?}",
                t.dims
            )));
        }
        Ok(&t.data)
    }

    /// Total number of values.
    pub fn numel(&self) -> usize {
        self.tensors.values().map(|t| t.data.len()).sum()
    }

    /// All values concatenated in name order (the layout updates are computed in).
    pub fn flatten(&self) -> Vec<f32> {
        self.tensors
            .values()
            .flat_map(|t| t.data.iter().copied())
            .collect()
    }

    /// Replaces all values from a flat vector in name order.
    pub fn unflatten(&mut self, flat: &[f32]) -> Result<()> {
        if flat.len() != self.numel() {
            return Err(Error::BadWeights(format!(
                "flat vector has {} values, model has {}",
                flat.len(),
                self.numel()
            )));
        }
        let mut at = 0;
        for t in self.tensors.values_mut() {
            let n = t.data.len();
            t.data.copy_from_slice(&flat[at..at + n]);
            at += n;
        }
        Ok(())
    }

    /// Reads safetensors (f32, f16 or bf16 tensors; others are skipped).
    pub fn from_safetensors(bytes: &[u8]) -> Result<Self> {
        let st = safetensors::SafeTensors::deserialize(bytes)
            .map_err(|e| Error::BadWeights(format!("safetensors: {e}")))?;
        let mut out = Params::default();
        for (name, view) in st.tensors() {
            let raw = view.data();
            let data: Vec<f32> = match view.dtype() {
                safetensors::Dtype::F32 => raw
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
                safetensors::Dtype::F16 => raw
                    .chunks_exact(2)
                    .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
                    .collect(),
                safetensors::Dtype::BF16 => raw
                    .chunks_exact(2)
                    .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32())
                    .collect(),
                _ => continue,
            };
            out.insert(name, view.shape().to_vec(), data);
        }
        Ok(out)
    }

    /// Writes safetensors with f32 tensors, in name order.
    pub fn to_safetensors(&self) -> Result<Vec<u8>> {
        let bytes: Vec<(String, Vec<usize>, Vec<u8>)> = self
            .tensors
            .iter()
            .map(|(n, t)| {
                (
                    n.clone(),
                    t.dims.clone(),
                    t.data.iter().flat_map(|v| v.to_le_bytes()).collect(),
                )
            })
            .collect();
        let views = bytes
            .iter()
            .map(|(n, d, b)| {
                safetensors::tensor::TensorView::new(safetensors::Dtype::F32, d.clone(), b)
                    .map(|v| (n.clone(), v))
                    .map_err(|e| Error::BadWeights(format!("safetensors: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        safetensors::serialize(views, None)
            .map_err(|e| Error::BadWeights(format!("safetensors: {e}")))
    }
}
