//! A Llama-family GGUF checkpoint as the decoder's [`LlamaShape`] and [`Params`] with the
//! HuggingFace tensor names. llama.cpp's converter stores the attention Q and K rows
//! permuted for its RoPE (pairs of adjacent values rotate together); the decoder here uses
//! HuggingFace's rotate-half layout, so the permutation is undone on load.

use gpuchain_jobspec::LlamaShape;

use super::reader::{Gguf, Value};
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

/// Every tensor of `g` dequantised to f32 under its HuggingFace name.
pub fn params(g: &Gguf<'_>, shape: &LlamaShape) -> Result<Params> {
    let mut p = Params::default();
    let get = |name: &str| -> Result<(Vec<usize>, Vec<f32>)> {
        let info = g
            .tensor(name)
            .ok_or_else(|| bad(format!("missing tensor `{name}`")))?;
        Ok((info.shape(), g.f32_values(info)?))
    };
    let (heads, kv) = (shape.num_heads as usize, shape.num_kv_heads as usize);
    let (dims, data) = get("token_embd.weight")?;
    p.insert("model.embed_tokens.weight", dims, data);
    let (dims, data) = get("output_norm.weight")?;
    p.insert("model.norm.weight", dims, data);
    if g.tensor("output.weight").is_some() {
        let (dims, data) = get("output.weight")?;
        p.insert("lm_head.weight", dims, data);
    }
    for l in 0..shape.num_layers {
        let from = |s: &str| format!("blk.{l}.{s}.weight");
        let to = |s: &str| format!("model.layers.{l}.{s}.weight");
        for (gguf, hf) in [
            ("attn_v", "self_attn.v_proj"),
            ("attn_output", "self_attn.o_proj"),
            ("ffn_gate", "mlp.gate_proj"),
            ("ffn_up", "mlp.up_proj"),
            ("ffn_down", "mlp.down_proj"),
            ("attn_norm", "input_layernorm"),
            ("ffn_norm", "post_attention_layernorm"),
        ] {
            let (dims, data) = get(&from(gguf))?;
            p.insert(to(hf), dims, data);
        }
        for (gguf, hf, n) in [
            ("attn_q", "self_attn.q_proj", heads),
            ("attn_k", "self_attn.k_proj", kv),
        ] {
            let (dims, data) = get(&from(gguf))?;
            let cols = dims.last().copied().unwrap_or(1);
            p.insert(to(hf), dims, unpermute_rows(&data, n, cols));
        }
    }
    Ok(p)
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
    }
}
