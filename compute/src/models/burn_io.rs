//! Moving weights between [`Params`] (PyTorch layouts) and burn modules.

use burn::module::Param;
use burn::nn::conv::Conv2d;
use burn::nn::Linear;
use burn::prelude::*;

use crate::params::Params;
use crate::Result;

/// Transposes a row-major `rows × cols` matrix.
pub fn transpose(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; x.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = x[r * cols + c];
        }
    }
    out
}

/// A tensor from f32 values.
pub fn tensor<B: Backend, const D: usize>(
    data: Vec<f32>,
    dims: [usize; D],
    device: &B::Device,
) -> Tensor<B, D> {
    Tensor::from_data(TensorData::new(data, dims), device)
}

/// A tensor's values as f32.
pub fn values<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    t.into_data()
        .convert::<f32>()
        .to_vec::<f32>()
        .unwrap_or_default()
}

/// Loads `<name>.weight` (`[out, in]`) and `<name>.bias` into a burn [`Linear`] (which
/// stores `[in, out]`).
pub fn load_linear<B: Backend>(
    mut layer: Linear<B>,
    p: &Params,
    name: &str,
    d_in: usize,
    d_out: usize,
    device: &B::Device,
) -> Result<Linear<B>> {
    let w = p.get(&format!("{name}.weight"), &[d_out, d_in])?;
    layer.weight = Param::from_tensor(tensor(transpose(w, d_out, d_in), [d_in, d_out], device));
    if let Ok(b) = p.get(&format!("{name}.bias"), &[d_out]) {
        layer.bias = Some(Param::from_tensor(tensor(b.to_vec(), [d_out], device)));
    }
    Ok(layer)
}

/// Stores a burn [`Linear`] as `<name>.weight` (`[out, in]`) and `<name>.bias`.
pub fn save_linear<B: Backend>(layer: &Linear<B>, p: &mut Params, name: &str) {
    let [d_in, d_out] = layer.weight.val().dims();
    p.insert(
        format!("{name}.weight"),
        vec![d_out, d_in],
        transpose(&values(layer.weight.val()), d_in, d_out),
    );
    if let Some(b) = &layer.bias {
        p.insert(format!("{name}.bias"), vec![d_out], values(b.val()));
    }
}

/// Loads `<name>.weight` (`[out, in, kh, kw]`) and `<name>.bias` into a [`Conv2d`].
pub fn load_conv<B: Backend>(
    mut layer: Conv2d<B>,
    p: &Params,
    name: &str,
    device: &B::Device,
) -> Result<Conv2d<B>> {
    let dims = layer.weight.val().dims();
    let w = p.get(&format!("{name}.weight"), &dims)?;
    layer.weight = Param::from_tensor(tensor(w.to_vec(), dims, device));
    let b = p.get(&format!("{name}.bias"), &[dims[0]])?;
    layer.bias = Some(Param::from_tensor(tensor(b.to_vec(), [dims[0]], device)));
    Ok(layer)
}

/// Stores a [`Conv2d`] as `<name>.weight` and `<name>.bias`.
pub fn save_conv<B: Backend>(layer: &Conv2d<B>, p: &mut Params, name: &str) {
    let dims = layer.weight.val().dims();
    p.insert(
        format!("{name}.weight"),
        dims.to_vec(),
        values(layer.weight.val()),
    );
    if let Some(b) = &layer.bias {
        p.insert(format!("{name}.bias"), vec![dims[0]], values(b.val()));
    }
}
