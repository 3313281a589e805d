//! A Llama-family GGUF checkpoint as the decoder's [`LlamaShape`] and [`Params`] with the
//! HuggingFace tensor names. llama.cpp's converter stores the attention Q and K rows
//! permuted for its RoPE (pairs of adjacent values rotate together); the decoder here uses
//! HuggingFace's rotate-half layout, so the permutation is undone on load.

use gpuchain_jobspec::LlamaShape;

use std::collections::BTreeMap;

use super::reader::{Gguf, TensorInfo, Value};
use crate::llama::{DecoderWeights, LlamaConfig, Matrix, RowDecoder};
use crate::params::Params;
use crate::{Error, Result};

fn bad(what: impl Into<String>) -> Error {
    Error::BadWeights(format!("GGUF: {}", what.into()))
}

/// How an architecture's GGUF files differ: the prefix of their metadata keys, and whether
/// llama.cpp's converter stored Q and K in its pair layout (architectures it rotates in
/// halves, as HuggingFace does, are stored as they are).
struct Arch {
    name: &'static str,
    pair_layout: bool,
}

/// The Llama-family architectures the decoder runs: `llama` (Llama 2/3, SmolLM2, Mistral),
/// `qwen2` (Q/K/V biases) and `qwen3` (RMSNorm of each head's Q and K).
const ARCHS: [Arch; 3] = [
    Arch {
        name: "llama",
        pair_layout: true,
    },
    Arch {
        name: "qwen2",
        pair_layout: false,
    },
    Arch {
        name: "qwen3",
        pair_layout: false,
    },
];

fn arch(g: &Gguf<'_>) -> Result<&'static Arch> {
    let name = g.get("general.architecture").and_then(Value::as_str);
    ARCHS.iter().find(|a| Some(a.name) == name).ok_or_else(|| {
        bad(format!(
            "architecture {name:?} (llama, qwen2 and qwen3 are read)"
        ))
    })
}

fn u32_of(g: &Gguf<'_>, key: &str) -> Result<u32> {
    u32::try_from(g.u64(key)?).map_err(|_| bad(format!("`{key}` is too large")))
}

fn optional_u32(g: &Gguf<'_>, key: &str) -> Result<Option<u32>> {
    g.get(key)
        .map(|v| {
            v.as_u64()
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| bad(format!("`{key}` is not a count")))
        })
        .transpose()
}

/// The decoder shape in `g`'s metadata (`max_seq_len` from the context length). What the
/// integer shape cannot hold (head size, rope scaling) is in [`config`].
pub fn shape(g: &Gguf<'_>) -> Result<LlamaShape> {
    let a = arch(g)?.name;
    let key = |k: &str| format!("{a}.{k}");
    let vocab = match g.get(&key("vocab_size")).and_then(Value::as_u64) {
        Some(v) => u32::try_from(v).map_err(|_| bad("vocab too large"))?,
        None => u32::try_from(
            g.get("tokenizer.ggml.tokens")
                .and_then(Value::as_array)
                .map_or(0, <[Value]>::len),
        )
        .map_err(|_| bad("vocab too large"))?,
    };
    let float = |k: &str| {
        g.get(&key(k))
            .and_then(Value::as_f64)
            .ok_or_else(|| bad(format!("missing `{}`", key(k))))
    };
    let shape = LlamaShape {
        vocab_size: vocab,
        hidden_size: u32_of(g, &key("embedding_length"))?,
        intermediate_size: u32_of(g, &key("feed_forward_length"))?,
        num_layers: u32_of(g, &key("block_count"))?,
        num_heads: u32_of(g, &key("attention.head_count"))?,
        num_kv_heads: u32_of(g, &key("attention.head_count_kv"))?,
        max_seq_len: u32_of(g, &key("context_length"))?,
        rope_theta: float("rope.freq_base")?.round() as u32,
        rms_norm_eps_ppb: (float("attention.layer_norm_rms_epsilon")? * 1e9).round() as u32,
    };
    if shape.num_heads == 0 || shape.num_kv_heads == 0 || shape.num_heads % shape.num_kv_heads != 0
    {
        return Err(bad("KV heads do not divide the heads"));
    }
    head_size(g, &shape)?;
    Ok(shape)
}

/// Values per attention head: `attention.key_length` where the file sets it (Qwen3 and some
/// Llamas have heads wider or narrower than width / heads), else width / heads. Values and
/// rotary embeddings must span the same size: partial rotary embeddings and value heads of
/// another size are refused.
fn head_size(g: &Gguf<'_>, shape: &LlamaShape) -> Result<u32> {
    let a = arch(g)?.name;
    let keys = match optional_u32(g, &format!("{a}.attention.key_length"))? {
        Some(keys) => keys,
        None if shape.num_heads > 0 && shape.hidden_size % shape.num_heads == 0 => {
            shape.hidden_size / shape.num_heads
        }
        None => return Err(bad("the heads do not divide the width")),
    };
    let values = optional_u32(g, &format!("{a}.attention.value_length"))?.unwrap_or(keys);
    let rotary = optional_u32(g, &format!("{a}.rope.dimension_count"))?.unwrap_or(keys);
    if keys == 0 || keys % 2 != 0 || values != keys || rotary != keys {
        return Err(bad(format!(
            "heads of {keys} key, {values} value and {rotary} rotary values \
             (one even size for all three is run)"
        )));
    }
    Ok(keys)
}

/// The decoder of `g`: its [`shape`], its head size and its rope scaling. Linear scaling
/// (`rope.scaling.type = linear`) divides positions by its factor; Llama 3.1's scaling comes
/// as per-pair factors in the tensor `rope_freqs.weight`, which the decoders read with the
/// weights. Other scaling types (YaRN, LongRoPE) are refused.
pub fn config(g: &Gguf<'_>) -> Result<LlamaConfig> {
    let shape = shape(g)?;
    let a = arch(g)?.name;
    let scaling = g
        .get(&format!("{a}.rope.scaling.type"))
        .map(|v| {
            v.as_str()
                .ok_or_else(|| bad("`rope.scaling.type` is not a string"))
        })
        .transpose()?;
    let position_scale = match scaling {
        None | Some("none") => 1.0,
        Some("linear") => {
            let factor = g
                .get(&format!("{a}.rope.scaling.factor"))
                .and_then(Value::as_f64)
                .ok_or_else(|| bad("linear rope scaling without `rope.scaling.factor`"))?;
            if !(factor.is_finite() && factor >= 1.0) {
                return Err(bad(format!(
                    "rope scaling factor {factor} (at least 1 is run)"
                )));
            }
            (1.0 / factor) as f32
        }
        Some(other) => {
            return Err(bad(format!(
                "rope scaling `{other}` (none, linear and Llama 3's rope_freqs are run)"
            )))
        }
    };
    Ok(LlamaConfig::from_shape(&shape)
        .with_head_size(Some(head_size(g, &shape)? as usize))
        .with_rope_position_scale(position_scale))
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

/// The name the decoders read Llama 3.1's per-pair rope factors by (HuggingFace computes them
/// from its config; llama.cpp's converter stores them as `rope_freqs.weight`).
pub const ROPE_FACTORS: &str = "rope_freqs.weight";

/// One tensor of a Llama GGUF: its name in the file, its HuggingFace name, and for the
/// attention Q and K weights the head count to undo llama.cpp's pair layout with.
struct Named {
    gguf: String,
    hf: String,
    unpermute_heads: Option<usize>,
}

/// Every tensor a Llama-family GGUF of `shape` holds: the output layer, rope factors, Q/K/V
/// biases and Q/K norms only where `g` has them. Q and K rows (and their biases) are
/// unpermuted for architectures stored in llama.cpp's pair layout.
fn names(g: &Gguf<'_>, shape: &LlamaShape) -> Result<Vec<Named>> {
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
    for (gguf, hf) in [
        ("output.weight", "lm_head.weight"),
        ("rope_freqs.weight", ROPE_FACTORS),
    ] {
        if g.tensor(gguf).is_some() {
            out.push(named(gguf.into(), hf, None));
        }
    }
    let pairs = arch(g)?.pair_layout;
    let (heads, kv) = (shape.num_heads as usize, shape.num_kv_heads as usize);
    let (q, k) = (pairs.then_some(heads), pairs.then_some(kv));
    for l in 0..shape.num_layers {
        for (gguf, hf, unpermute, required) in [
            ("attn_q.weight", "self_attn.q_proj.weight", q, true),
            ("attn_k.weight", "self_attn.k_proj.weight", k, true),
            ("attn_v.weight", "self_attn.v_proj.weight", None, true),
            ("attn_output.weight", "self_attn.o_proj.weight", None, true),
            ("ffn_gate.weight", "mlp.gate_proj.weight", None, true),
            ("ffn_up.weight", "mlp.up_proj.weight", None, true),
            ("ffn_down.weight", "mlp.down_proj.weight", None, true),
            ("attn_norm.weight", "input_layernorm.weight", None, true),
            (
                "ffn_norm.weight",
                "post_attention_layernorm.weight",
                None,
                true,
            ),
            ("attn_q.bias", "self_attn.q_proj.bias", q, false),
            ("attn_k.bias", "self_attn.k_proj.bias", k, false),
            ("attn_v.bias", "self_attn.v_proj.bias", None, false),
            ("attn_q_norm.weight", "self_attn.q_norm.weight", None, false),
            ("attn_k_norm.weight", "self_attn.k_norm.weight", None, false),
        ] {
            let gguf = format!("blk.{l}.{gguf}");
            if required || g.tensor(&gguf).is_some() {
                out.push(named(gguf, &format!("model.layers.{l}.{hf}"), unpermute));
            }
        }
    }
    Ok(out)
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
    for n in names(g, shape)? {
        let info = g
            .tensor(&n.gguf)
            .ok_or_else(|| bad(format!("missing tensor `{}`", n.gguf)))?;
        let (dims, data) = (info.shape(), g.f32_values(info)?);
        let cols = if dims.len() == 2 { dims[1] } else { 1 };
        let data = match n.unpermute_heads {
            Some(heads) => unpermute_rows(&data, heads, cols),
            None => data,
        };
        p.insert(n.hf, dims, data);
    }
    Ok(p)
}

/// The row decoder of a Llama-family GGUF file, with its quantised blocks kept as they are.
pub fn row_decoder(g: &Gguf<'_>) -> Result<RowDecoder> {
    RowDecoder::new(config(g)?, &GgufWeights::new(g, &shape(g)?)?)
}

/// A Llama GGUF's weights for the row decoder, under their HuggingFace names, with 4- and
/// 8-bit blocks kept as they are (see [`Matrix::from_ggml`]).
pub struct GgufWeights<'a, 'b> {
    g: &'b Gguf<'a>,
    /// HuggingFace name → (GGUF name, heads to unpermute by).
    by_hf: BTreeMap<String, (String, Option<usize>)>,
}

impl<'a, 'b> GgufWeights<'a, 'b> {
    /// The weights of `g`, a Llama-family GGUF of `shape`.
    pub fn new(g: &'b Gguf<'a>, shape: &LlamaShape) -> Result<GgufWeights<'a, 'b>> {
        let by_hf = names(g, shape)?
            .into_iter()
            .map(|n| (n.hf, (n.gguf, n.unpermute_heads)))
            .collect();
        Ok(GgufWeights { g, by_hf })
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
        let (info, heads) = self.info(name)?;
        if info.shape() != [len] {
            return Err(bad(format!(
                "tensor {} is {:?}, not [{len}]",
                info.name,
                info.shape()
            )));
        }
        let values = self.g.f32_values(info)?;
        Ok(match heads {
            Some(heads) => unpermute_rows(&values, heads, 1),
            None => values,
        })
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
