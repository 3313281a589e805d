//! The decoder in burn.

use burn::module::Param;
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig};
use burn::prelude::*;
use burn::tensor::activation::{silu, softmax};
use gpuchain_jobspec::LlamaShape;

use super::layers::{rope, rope_frequencies, RmsNorm};
use crate::gguf::llama::ROPE_FACTORS;
use crate::models::burn_io::{load_linear, tensor};
use crate::models::init::SplitMix64;
use crate::params::Params;

/// Decoder shape, from a [`LlamaShape`].
#[derive(Config, Debug)]
pub struct LlamaConfig {
    /// Vocabulary.
    pub vocab: usize,
    /// Width.
    pub hidden: usize,
    /// SwiGLU inner width.
    pub intermediate: usize,
    /// Layers.
    pub layers: usize,
    /// Query heads.
    pub heads: usize,
    /// Key/value heads.
    pub kv_heads: usize,
    /// Longest sequence.
    pub max_seq_len: usize,
    /// RoPE base.
    pub rope_theta: f32,
    /// RMSNorm epsilon.
    pub eps: f32,
    /// Values per attention head, where a checkpoint sets it; else `hidden / heads`.
    pub head_size: Option<usize>,
    /// Multiplier of positions in RoPE: 1 / the factor of linear rope scaling.
    #[config(default = 1.0)]
    pub rope_position_scale: f32,
}

impl LlamaConfig {
    /// From the integer shape in a job spec.
    pub fn from_shape(s: &LlamaShape) -> Self {
        LlamaConfig::new(
            s.vocab_size as usize,
            s.hidden_size as usize,
            s.intermediate_size as usize,
            s.num_layers as usize,
            s.num_heads as usize,
            s.num_kv_heads as usize,
            s.max_seq_len as usize,
            s.rope_theta as f32,
            s.rms_norm_eps_ppb as f32 * 1e-9,
        )
    }

    /// Values per attention head.
    pub fn head_dim(&self) -> usize {
        self.head_size.unwrap_or(self.hidden / self.heads.max(1))
    }

    /// Each rotated pair's frequency (see [`rope_frequencies`]), with the per-pair factors of
    /// Llama 3.1's rope scaling when the weights hold them.
    pub(super) fn rope_frequencies(&self, factors: Option<&[f32]>) -> crate::Result<Vec<f32>> {
        let half = self.head_dim() / 2;
        if let Some(f) = factors {
            if f.len() != half || f.iter().any(|x| !(x.is_finite() && *x > 0.0)) {
                return Err(crate::Error::BadWeights(format!(
                    "rope factors: {half} positive values are needed, {} given",
                    f.len()
                )));
            }
        }
        Ok(rope_frequencies(
            self.head_dim(),
            self.rope_theta,
            factors,
            self.rope_position_scale,
        ))
    }
}

/// One decoder layer.
#[derive(Module, Debug)]
pub struct DecoderLayer<B: Backend> {
    attn_norm: RmsNorm<B>,
    q: Linear<B>,
    k: Linear<B>,
    v: Linear<B>,
    /// Qwen3's RMSNorm of each head's queries and keys, before RoPE.
    q_norm: Option<RmsNorm<B>>,
    k_norm: Option<RmsNorm<B>>,
    o: Linear<B>,
    mlp_norm: RmsNorm<B>,
    gate: Linear<B>,
    up: Linear<B>,
    down: Linear<B>,
}

/// The decoder.
#[derive(Module, Debug)]
pub struct Llama<B: Backend> {
    embed: Embedding<B>,
    layers: Vec<DecoderLayer<B>>,
    norm: RmsNorm<B>,
    lm_head: Linear<B>,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    /// Angular frequency of each rotated pair of a head.
    rope_freqs: Vec<f32>,
}

/// Per-layer keys and values `[b, kv_heads, t, head_dim]` of the tokens seen so far.
#[derive(Debug, Default)]
pub struct KvCache<B: Backend> {
    layers: Vec<Option<(Tensor<B, 4>, Tensor<B, 4>)>>,
}

impl<B: Backend> KvCache<B> {
    /// An empty cache.
    pub fn new() -> Self {
        Self { layers: Vec::new() }
    }
}

fn norm_from<B: Backend>(
    p: &Params,
    name: &str,
    d: usize,
    eps: f32,
    device: &B::Device,
) -> crate::Result<RmsNorm<B>> {
    Ok(RmsNorm::new(
        Param::from_tensor(tensor(p.get(name, &[d])?.to_vec(), [d], device)),
        eps,
    ))
}

impl LlamaConfig {
    /// Loads a decoder from Llama tensor names.
    pub fn load<B: Backend>(&self, p: &Params, device: &B::Device) -> crate::Result<Llama<B>> {
        let (h, i, d) = (self.hidden, self.intermediate, self.head_dim());
        let (q, kv) = (self.heads * d, self.kv_heads * d);
        let head_norm = |name: String| {
            p.tensors
                .contains_key(&name)
                .then(|| norm_from(p, &name, d, self.eps, device))
                .transpose()
        };
        let lin = |name: String, d_in, d_out| {
            load_linear(
                LinearConfig::new(1, 1).with_bias(false).init(device),
                p,
                &name,
                d_in,
                d_out,
                device,
            )
        };
        let mut layers = Vec::new();
        for l in 0..self.layers {
            let pre = format!("model.layers.{l}");
            layers.push(DecoderLayer {
                attn_norm: norm_from(
                    p,
                    &format!("{pre}.input_layernorm.weight"),
                    h,
                    self.eps,
                    device,
                )?,
                q: lin(format!("{pre}.self_attn.q_proj"), h, q)?,
                k: lin(format!("{pre}.self_attn.k_proj"), h, kv)?,
                v: lin(format!("{pre}.self_attn.v_proj"), h, kv)?,
                q_norm: head_norm(format!("{pre}.self_attn.q_norm.weight"))?,
                k_norm: head_norm(format!("{pre}.self_attn.k_norm.weight"))?,
                o: lin(format!("{pre}.self_attn.o_proj"), q, h)?,
                mlp_norm: norm_from(
                    p,
                    &format!("{pre}.post_attention_layernorm.weight"),
                    h,
                    self.eps,
                    device,
                )?,
                gate: lin(format!("{pre}.mlp.gate_proj"), h, i)?,
                up: lin(format!("{pre}.mlp.up_proj"), h, i)?,
                down: lin(format!("{pre}.mlp.down_proj"), i, h)?,
            });
        }
        let mut embed = EmbeddingConfig::new(1, h).init(device);
        embed.weight = Param::from_tensor(tensor(
            p.get("model.embed_tokens.weight", &[self.vocab, h])?
                .to_vec(),
            [self.vocab, h],
            device,
        ));
        Ok(Llama {
            embed,
            layers,
            norm: norm_from(p, "model.norm.weight", h, self.eps, device)?,
            // Checkpoints with tied embeddings have no `lm_head.weight`; the output layer then
            // reuses `model.embed_tokens.weight` (same `[vocab, hidden]` layout).
            lm_head: if p.tensors.contains_key("lm_head.weight") {
                lin("lm_head".into(), h, self.vocab)?
            } else {
                lin("model.embed_tokens".into(), h, self.vocab)?
            },
            heads: self.heads,
            kv_heads: self.kv_heads,
            head_dim: d,
            rope_freqs: self.rope_frequencies(
                p.tensors
                    .contains_key(ROPE_FACTORS)
                    .then(|| p.get(ROPE_FACTORS, &[d / 2]))
                    .transpose()?,
            )?,
        })
    }
}

/// Seeded random weights in Llama naming (for tests and benchmarks; uniform ±1/√fan_in,
/// norms at 1).
pub fn random_params(c: &LlamaConfig, seed: u64) -> Params {
    let mut rng = SplitMix64::new(seed);
    let mut p = Params::default();
    let (h, i, kv) = (c.hidden, c.intermediate, c.kv_heads * c.head_dim());
    let mat = |p: &mut Params, rng: &mut SplitMix64, name: String, out: usize, inp: usize| {
        let data = crate::models::init::fan_in_uniform(rng, out * inp, inp);
        p.insert(name, vec![out, inp], data);
    };
    let embed = crate::models::init::fan_in_uniform(&mut rng, c.vocab * h, 1);
    p.insert("model.embed_tokens.weight", vec![c.vocab, h], embed);
    for l in 0..c.layers {
        let pre = format!("model.layers.{l}");
        mat(
            &mut p,
            &mut rng,
            format!("{pre}.self_attn.q_proj.weight"),
            h,
            h,
        );
        mat(
            &mut p,
            &mut rng,
            format!("{pre}.self_attn.k_proj.weight"),
            kv,
            h,
        );
        mat(
            &mut p,
            &mut rng,
            format!("{pre}.self_attn.v_proj.weight"),
            kv,
            h,
        );
        mat(
            &mut p,
            &mut rng,
            format!("{pre}.self_attn.o_proj.weight"),
            h,
            h,
        );
        mat(
            &mut p,
            &mut rng,
            format!("{pre}.mlp.gate_proj.weight"),
            i,
            h,
        );
        mat(&mut p, &mut rng, format!("{pre}.mlp.up_proj.weight"), i, h);
        mat(
            &mut p,
            &mut rng,
            format!("{pre}.mlp.down_proj.weight"),
            h,
            i,
        );
        p.insert(
            format!("{pre}.input_layernorm.weight"),
            vec![h],
            vec![1.0; h],
        );
        p.insert(
            format!("{pre}.post_attention_layernorm.weight"),
            vec![h],
            vec![1.0; h],
        );
    }
    p.insert("model.norm.weight", vec![h], vec![1.0; h]);
    mat(&mut p, &mut rng, "lm_head.weight".into(), c.vocab, h);
    p
}

impl<B: Backend> Llama<B> {
    /// Logits `[b, s, vocab]` for `tokens: [b, s]` at positions `start..start+s`. With a
    /// cache, keys and values of earlier positions come from it and the new ones are added.
    pub fn forward(
        &self,
        tokens: Tensor<B, 2, Int>,
        start: usize,
        mut cache: Option<&mut KvCache<B>>,
    ) -> Tensor<B, 3> {
        let [b, s] = tokens.dims();
        let device = tokens.device();
        let mut x = self.embed.forward(tokens); // [b, s, h]
        let dh = self.head_dim;
        let rep = self.heads / self.kv_heads;
        if let Some(c) = cache.as_deref_mut() {
            c.layers.resize_with(self.layers.len(), || None);
        }
        // [b, s, heads × dh] → [b, heads, s, dh], each head's values normed (Qwen3) and rotated.
        let heads_of = |z: Tensor<B, 3>, heads: usize, norm: Option<&RmsNorm<B>>, rotate: bool| {
            let z = match norm {
                Some(n) => n
                    .forward(z.reshape([b, s * heads, dh]))
                    .reshape([b, s, heads, dh]),
                None => z.reshape([b, s, heads, dh]),
            }
            .swap_dims(1, 2);
            if rotate {
                rope(z, start, &self.rope_freqs)
            } else {
                z
            }
        };
        for (l, layer) in self.layers.iter().enumerate() {
            let a = layer.attn_norm.forward(x.clone());
            let q = heads_of(
                layer.q.forward(a.clone()),
                self.heads,
                layer.q_norm.as_ref(),
                true,
            ); // [b, H, s, dh]
            let mut k = heads_of(
                layer.k.forward(a.clone()),
                self.kv_heads,
                layer.k_norm.as_ref(),
                true,
            ); // [b, KV, s, dh]
            let mut v = heads_of(layer.v.forward(a), self.kv_heads, None, false);
            if let Some(c) = cache.as_deref_mut() {
                if let Some((pk, pv)) = c.layers[l].take() {
                    k = Tensor::cat(vec![pk, k], 2);
                    v = Tensor::cat(vec![pv, v], 2);
                }
                c.layers[l] = Some((k.clone(), v.clone()));
            }
            let t = k.dims()[2]; // keys seen: start + s
            let expand = |z: Tensor<B, 4>| {
                z.unsqueeze_dim::<5>(2)
                    .repeat_dim(2, rep)
                    .reshape([b, self.heads, t, dh])
            }; // [b, H, t, dh]
            let scores = q
                .matmul(expand(k).swap_dims(2, 3))
                .div_scalar((dh as f32).sqrt()); // [b, H, s, t]
            let mask: Vec<f32> = (0..s)
                .flat_map(|i| (0..t).map(move |j| if j <= t - s + i { 0.0 } else { -1e9 }))
                .collect();
            let scores = scores + tensor::<B, 2>(mask, [s, t], &device).reshape([1, 1, s, t]);
            let ctx = softmax(scores, 3)
                .matmul(expand(v))
                .swap_dims(1, 2)
                .reshape([b, s, self.heads * dh]); // [b, s, H × dh]
            x = x + layer.o.forward(ctx);
            let m = layer.mlp_norm.forward(x.clone());
            x = x + layer
                .down
                .forward(silu(layer.gate.forward(m.clone())) * layer.up.forward(m));
            // SwiGLU
        }
        self.lm_head.forward(self.norm.forward(x))
    }
}
