//! A Llama-family GGUF checkpoint as the decoder's [`LlamaShape`] and [`Params`] with the
//! HuggingFace tensor names. llama.cpp's converter stores the attention Q and K rows
//! permuted for its RoPE (pairs of adjacent values rotate together); the decoder here uses
//! HuggingFace's rotate-half layout, so the permutation is undone on load.

use gpuchain_jobspec::LlamaShape;

use std::collections::BTreeMap;

use super::reader::{Gguf, TensorInfo, Value};
use crate::llama::{DecoderWeights, Matrix};
use crate::params::Params;
use crate::{Error, Result};

fn bad(what: impl Into<String>) -> Error {
    Error::BadWeights(format!("GGUF: {}", what.into()))
}

fn u32_of(g: &Gguf<'_>, key: &str) -> Result<u32> {
    u32::try_from(g.u64(key)?).map_err(|_| bad(format!("`{key}` is too large")))
}

/// The decoder shape in `g`'s `llama.*` metadata (`max_seq_len` from the context length).
pub fn shape(g: &Gguf<'_>) -> Result<LlamaShape> {
    let arch = g.get("general.architecture").and_then(Value::as_str);
    if arch != Some("llama") {
        return Err(bad(format!("architecture {arch:?} (llama is read)")));
    }
    let vocab = match g.get("llama.vocab_size").and_then(Value::as_u64) {
        Some(v) => u32::try_from(v).map_err(|_| bad("vocab too large"))?,
        None => u32::try_from(
            g.get("tokenizer.ggml.tokens")
                .and_then(Value::as_array)
                .map_or(0, <[Value]>::len),
        )
        .map_err(|_| bad("vocab too large"))?,
    };
    let float = |key: &str| {
        g.get(key)
            .and_then(Value::as_f64)
            .ok_or_else(|| bad(format!("missing `{key}`")))
    };
    let shape = LlamaShape {
        vocab_size: vocab,
        hidden_size: u32_of(g, "llama.embedding_length")?,
        intermediate_size: u32_of(g, "llama.feed_forward_length")?,
        num_layers: u32_of(g, "llama.block_count")?,
        num_heads: u32_of(g, "llama.attention.head_count")?,
        num_kv_heads: u32_of(g, "llama.attention.head_count_kv")?,
        max_seq_len: u32_of(g, "llama.context_length")?,
        rope_theta: float("llama.rope.freq_base")?.round() as u32,
        rms_norm_eps_ppb: (float("llama.attention.layer_norm_rms_epsilon")? * 1e9).round() as u32,
    };
    let head = shape.hidden_size / shape.num_heads.max(1);
    if g.get("llama.rope.dimension_count").and_then(Value::as_u64) != Some(u64::from(head))
        || shape.num_heads == 0
        || shape.num_kv_heads == 0
        || shape.num_heads % shape.num_kv_heads != 0
        || shape.hidden_size % shape.num_heads != 0
    {
        return Err(bad(
            "heads, KV heads and RoPE dimension do not fit the width",
        ));
    }
    Ok(shape)
}

/// Rows of a Q or K weight (`heads` heads of `rows / heads` rows, each `cols` wide) back from
/// llama.cpp's pair layout to HuggingFace's halves: row `2i + p` of a head goes to
/// `p × half + i`.
pub fn unpermute_rows(w: &[f32], heads: usize, cols: usize) -> Vec<f32> {
    let rows = w.len() / cols.max(1);
    let head = rows / heads.max(1);
    let half = head / 2;
    let mut out = vec![0.0; w.len()];
    for h in 0..heads {
        for i in 0..half {
            for p in 0..2 {
                let from = (h * head + 2 * i + p) * cols;
                let to = (h * head + p * half + i) * cols;
                out[to..to + cols].copy_from_slice(&w[from..from + cols]);
            }
        }
    }
    out
}

/// One tensor of a Llama GGUF: its name in the file, its HuggingFace name, and for the
/// attention Q and K weights the head count to undo llama.cpp's pair layout with.
struct Named {
    gguf: String,
    hf: String,
    unpermute_heads: Option<usize>,
}

/// Every tensor a Llama GGUF of `shape` holds (`output.weight` only when `g` has one).
fn names(g: &Gguf<'_>, shape: &LlamaShape) -> Vec<Named> {
    let named = |gguf: String, hf: &str, unpermute_heads| Named {
        gguf,
        hf: hf.to_string(),
        unpermute_heads,
    };
    let mut out = vec![
        named(
            "token_embd.weight".into(),
            "model.embed_tokens.weight",
            None,
        ),
        named("output_norm.weight".into(), "model.norm.weight", None),
    ];
    if g.tensor("output.weight").is_some() {
        out.push(named("output.weight".into(), "lm_head.weight", None));
    }
    let (heads, kv) = (shape.num_heads as usize, shape.num_kv_heads as usize);
    for l in 0..shape.num_layers {
        for (gguf, hf, unpermute) in [
            ("attn_q", "self_attn.q_proj", Some(heads)),
            ("attn_k", "self_attn.k_proj", Some(kv)),
            ("attn_v", "self_attn.v_proj", None),
            ("attn_output", "self_attn.o_proj", None),
            ("ffn_gate", "mlp.gate_proj", None),
            ("ffn_up", "mlp.up_proj", None),
            ("ffn_down", "mlp.down_proj", None),
            ("attn_norm", "input_layernorm", None),
            ("ffn_norm", "post_attention_layernorm", None),
        ] {
            out.push(named(
                format!("blk.{l}.{gguf}.weight"),
                &format!("model.layers.{l}.{hf}.weight"),
                unpermute,
            ));
        }
    }
    out
}

/// Row order that undoes llama.cpp's pair layout (see [`unpermute_rows`]): row `i` of the
/// result is row `order[i]` of the stored matrix.
fn unpermuted_order(rows: usize, heads: usize) -> Vec<usize> {
    let head = rows / heads.max(1);
    let half = head / 2;
    let mut order = (0..rows).collect::<Vec<_>>();
    for h in 0..heads {
        for i in 0..half {
            for p in 0..2 {
                order[h * head + p * half + i] = h * head + 2 * i + p;
            }
        }
    }
    order
}

/// Every tensor of `g` dequantised to f32 under its HuggingFace name.
pub fn params(g: &Gguf<'_>, shape: &LlamaShape) -> Result<Params> {
    let mut p = Params::default();
    for n in names(g, shape) {
        let info = g
            .tensor(&n.gguf)
            .ok_or_else(|| bad(format!("missing tensor `{}`", n.gguf)))?;
        let (dims, data) = (info.shape(), g.f32_values(info)?);
        let data = match n.unpermute_heads {
            Some(heads) => unpermute_rows(&data, heads, dims.last().copied().unwrap_or(1)),
            None => data,
        };
        p.insert(n.hf, dims, data);
    }
    Ok(p)
}

/// A Llama GGUF's weights for the row decoder, under their HuggingFace names, with 4- and
/// 8-bit blocks kept as they are (see [`Matrix::from_ggml`]).
pub struct GgufWeights<'a, 'b> {
    g: &'b Gguf<'a>,
    /// HuggingFace name → (GGUF name, heads to unpermute by).
    by_hf: BTreeMap<String, (String, Option<usize>)>,
}

impl<'a, 'b> GgufWeights<'a, 'b> {
    /// The weights of `g`, a Llama GGUF of `shape`.
    pub fn new(g: &'b Gguf<'a>, shape: &LlamaShape) -> GgufWeights<'a, 'b> {
        let by_hf = names(g, shape)
            .into_iter()
            .map(|n| (n.hf, (n.gguf, n.unpermute_heads)))
            .collect();
        GgufWeights { g, by_hf }
    }

    fn info(&self, hf: &str) -> Result<(&TensorInfo, Option<usize>)> {
        let (gguf, heads) = self
            .by_hf
            .get(hf)
            .ok_or_else(|| bad(format!("no tensor for `{hf}`")))?;
        let info = self
            .g
            .tensor(gguf)
            .ok_or_else(|| bad(format!("missing tensor `{gguf}`")))?;
        Ok((info, *heads))
    }
}

impl DecoderWeights for GgufWeights<'_, '_> {
    fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Matrix> {
        let (info, heads) = self.info(name)?;
        if info.shape() != [rows, cols] {
            return Err(bad(format!(
                "tensor {} is {:?}, the model needs {:?}",
                info.name,
                info.shape(),
                [rows, cols]
            )));
        }
        let mut m = Matrix::from_ggml(info.kind, self.g.tensor_bytes(info)?, rows, cols)?;
        if let Some(heads) = heads {
            m.reorder_rows(&unpermuted_order(rows, heads));
        }
        Ok(m)
    }

    fn vector(&self, name: &str, len: usize) -> Result<Vec<f32>> {
        let (info, _) = self.info(name)?;
        if info.shape() != [len] {
            return Err(bad(format!(
                "tensor {} is {:?}, not [{len}]",
                info.name,
                info.shape()
            )));
        }
        self.g.f32_values(info)
    }

    fn has(&self, name: &str) -> bool {
        self.by_hf.contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpermuting_inverts_llama_cpp_pair_order() {
        // One head of 4 rows, 1 column: HF rows [a0 a1 | b0 b1] are stored as a0 b0 a1 b1.
        let stored = [10.0, 20.0, 11.0, 21.0];
        assert_eq!(unpermute_rows(&stored, 1, 1), vec![10.0, 11.0, 20.0, 21.0]);
        // Two heads, two columns: each head is unpermuted on its own.
        let stored: Vec<f32> = (0..16).map(|x| x as f32).collect();
        let hf = unpermute_rows(&stored, 2, 2);
        assert_eq!(&hf[..8], &[0.0, 1.0, 4.0, 5.0, 2.0, 3.0, 6.0, 7.0]);
        assert_eq!(&hf[8..], &[8.0, 9.0, 12.0, 13.0, 10.0, 11.0, 14.0, 15.0]);
        // The row order the quantised matrices are reordered by is the same permutation.
        let order = unpermuted_order(8, 2);
        let by_order: Vec<f32> = order
            .iter()
            .flat_map(|r| stored[r * 2..r * 2 + 2].to_vec())
            .collect();
        assert_eq!(by_order, hf);
    }
}
