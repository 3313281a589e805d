//! The BERT encoder in burn.

use burn::module::Param;
use burn::nn::{Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::prelude::*;
use burn::tensor::activation::{gelu, softmax};

use super::tokenize::Batch;
use crate::models::burn_io::{load_linear, tensor};
use crate::params::Params;

/// BERT shape (defaults: all-MiniLM-L6-v2).
#[derive(Config, Debug)]
pub struct BertConfig {
    /// Vocabulary size.
    #[config(default = 30522)]
    pub vocab: usize,
    /// Width.
    #[config(default = 384)]
    pub hidden: usize,
    /// Encoder layers.
    #[config(default = 6)]
    pub layers: usize,
    /// Attention heads.
    #[config(default = 12)]
    pub heads: usize,
    /// Feed-forward width.
    #[config(default = 1536)]
    pub intermediate: usize,
    /// Position embeddings.
    #[config(default = 512)]
    pub max_positions: usize,
    /// LayerNorm epsilon.
    #[config(default = 1e-12)]
    pub eps: f64,
}

/// One encoder layer.
#[derive(Module, Debug)]
pub struct BertLayer<B: Backend> {
    query: Linear<B>,
    key: Linear<B>,
    value: Linear<B>,
    attn_out: Linear<B>,
    attn_norm: LayerNorm<B>,
    ffn_in: Linear<B>,
    ffn_out: Linear<B>,
    ffn_norm: LayerNorm<B>,
    heads: usize,
}

/// The embedder: embeddings, encoder layers, mean pooling and L2 normalisation.
#[derive(Module, Debug)]
pub struct BertEmbedder<B: Backend> {
    word: Embedding<B>,
    position: Embedding<B>,
    token_type: Embedding<B>,
    emb_norm: LayerNorm<B>,
    layers: Vec<BertLayer<B>>,
}

fn load_norm<B: Backend>(
    p: &Params,
    name: &str,
    d: usize,
    eps: f64,
    device: &B::Device,
) -> crate::Result<LayerNorm<B>> {
    let mut n = LayerNormConfig::new(d).with_epsilon(eps).init(device);
    n.gamma = Param::from_tensor(tensor(
        p.get(&format!("{name}.weight"), &[d])?.to_vec(),
        [d],
        device,
    ));
    n.beta = Some(Param::from_tensor(tensor(
        p.get(&format!("{name}.bias"), &[d])?.to_vec(),
        [d],
        device,
    )));
    Ok(n)
}

fn load_embedding<B: Backend>(
    p: &Params,
    name: &str,
    n: usize,
    d: usize,
    device: &B::Device,
) -> crate::Result<Embedding<B>> {
    let mut e = EmbeddingConfig::new(1, d).init(device);
    e.weight = Param::from_tensor(tensor(p.get(name, &[n, d])?.to_vec(), [n, d], device));
    Ok(e)
}

impl BertConfig {
    /// Loads a model from HuggingFace BERT tensor names.
    pub fn load<B: Backend>(
        &self,
        p: &Params,
        device: &B::Device,
    ) -> crate::Result<BertEmbedder<B>> {
        let (h, i) = (self.hidden, self.intermediate);
        let lin = |name: &str, d_in, d_out| {
            load_linear(
                LinearConfig::new(1, 1).init(device),
                p,
                name,
                d_in,
                d_out,
                device,
            )
        };
        let mut layers = Vec::with_capacity(self.layers);
        for l in 0..self.layers {
            let pre = format!("encoder.layer.{l}");
            layers.push(BertLayer {
                query: lin(&format!("{pre}.attention.self.query"), h, h)?,
                key: lin(&format!("{pre}.attention.self.key"), h, h)?,
                value: lin(&format!("{pre}.attention.self.value"), h, h)?,
                attn_out: lin(&format!("{pre}.attention.output.dense"), h, h)?,
                attn_norm: load_norm(
                    p,
                    &format!("{pre}.attention.output.LayerNorm"),
                    h,
                    self.eps,
                    device,
                )?,
                ffn_in: lin(&format!("{pre}.intermediate.dense"), h, i)?,
                ffn_out: lin(&format!("{pre}.output.dense"), i, h)?,
                ffn_norm: load_norm(p, &format!("{pre}.output.LayerNorm"), h, self.eps, device)?,
                heads: self.heads,
            });
        }
        Ok(BertEmbedder {
            word: load_embedding(
                p,
                "embeddings.word_embeddings.weight",
                self.vocab,
                h,
                device,
            )?,
            position: load_embedding(
                p,
                "embeddings.position_embeddings.weight",
                self.max_positions,
                h,
                device,
            )?,
            token_type: load_embedding(p, "embeddings.token_type_embeddings.weight", 2, h, device)?,
            emb_norm: load_norm(p, "embeddings.LayerNorm", h, self.eps, device)?,
            layers,
        })
    }
}

impl<B: Backend> BertLayer<B> {
    /// `x: [b, s, h]`, `mask_add: [b, 1, 1, s]` (0 for tokens, large negative for padding).
    fn forward(&self, x: Tensor<B, 3>, mask_add: Tensor<B, 4>) -> Tensor<B, 3> {
        let [b, s, h] = x.dims();
        let dh = h / self.heads;
        let split = |t: Tensor<B, 3>| t.reshape([b, s, self.heads, dh]).swap_dims(1, 2); // → [b, heads, s, dh]
        let q = split(self.query.forward(x.clone()));
        let k = split(self.key.forward(x.clone()));
        let v = split(self.value.forward(x.clone()));
        let scores = q.matmul(k.swap_dims(2, 3)).div_scalar((dh as f32).sqrt()) + mask_add; // [b, heads, s, s]
        let ctx = softmax(scores, 3).matmul(v); // [b, heads, s, dh]
        let ctx = ctx.swap_dims(1, 2).reshape([b, s, h]); // → [b, s, h]
        let x = self.attn_norm.forward(self.attn_out.forward(ctx) + x);
        let ff = self.ffn_out.forward(gelu(self.ffn_in.forward(x.clone()))); // [b, s, 4h] → [b, s, h]
        self.ffn_norm.forward(ff + x)
    }
}

impl<B: Backend> BertEmbedder<B> {
    /// Unit-length sentence embeddings `[rows, hidden]` for a padded batch.
    pub fn forward(&self, batch: &Batch, device: &B::Device) -> Tensor<B, 2> {
        let (b, s) = (batch.rows, batch.len);
        let ids = Tensor::<B, 2, Int>::from_data(
            TensorData::new(
                batch.ids.iter().map(|v| i64::from(*v)).collect::<Vec<_>>(),
                [b, s],
            ),
            device,
        );
        let pos = Tensor::<B, 1, Int>::arange(0..s as i64, device)
            .unsqueeze::<2>()
            .repeat_dim(0, b); // [b, s]
        let types = Tensor::<B, 2, Int>::zeros([b, s], device);
        let mut x =
            self.word.forward(ids) + self.position.forward(pos) + self.token_type.forward(types); // [b, s, h]
        x = self.emb_norm.forward(x);
        let mask: Tensor<B, 2> = tensor(
            batch.mask.iter().map(|m| *m as f32).collect(),
            [b, s],
            device,
        );
        let mask_add = (mask.clone() - 1.0).mul_scalar(1e9).reshape([b, 1, 1, s]); // 0 or −1e9
        for layer in &self.layers {
            x = layer.forward(x, mask_add.clone());
        }
        let m3 = mask.clone().unsqueeze_dim::<3>(2); // [b, s, 1]
        let summed = (x * m3).sum_dim(1).squeeze_dim::<2>(1); // [b, h]
        let counts = mask.sum_dim(1).clamp_min(1e-9); // [b, 1]
        let mean = summed / counts;
        let norm = mean
            .clone()
            .powf_scalar(2.0)
            .sum_dim(1)
            .sqrt()
            .clamp_min(1e-12); // [b, 1]
        mean / norm
    }
}
