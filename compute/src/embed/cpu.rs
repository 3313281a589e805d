//! The embedder on the CPU: the BERT encoder of [`super::model`] on f32 matrix products
//! (`gpuchain_kernels::matmul`), with the sentences of a batch packed end to end — no
//! padding enters the arithmetic, as on the canonical path — and attention computed per
//! sentence on rayon's threads. The CPU backend runs it; burn's model runs on a GPU and the
//! canonical path stays the reference every result is compared with.

use gpuchain_kernels::{self as kernels, Mat, MatMut};
use rayon::prelude::*;

use super::model::BertConfig;
use crate::params::Params;
use crate::{Error, Result};

/// A linear layer with its weight transposed to `[d_in, d_out]`, the layout the products read.
struct Dense {
    w: Vec<f32>,
    b: Vec<f32>,
    d_in: usize,
    d_out: usize,
}

impl Dense {
    /// The layers `names` (HuggingFace `[d_out, d_in]` weights) side by side: one product
    /// gives all their outputs.
    fn load(p: &Params, names: &[String], d_in: usize, d_out: usize) -> Result<Dense> {
        let total = d_out * names.len();
        let mut w = vec![0.0f32; d_in * total];
        let mut b = Vec::with_capacity(total);
        for (part, name) in names.iter().enumerate() {
            let wp = p.get(&format!("{name}.weight"), &[d_out, d_in])?;
            for (o, row) in wp.chunks_exact(d_in).enumerate() {
                for (i, v) in row.iter().enumerate() {
                    w[i * total + part * d_out + o] = *v;
                }
            }
            b.extend_from_slice(p.get(&format!("{name}.bias"), &[d_out])?);
        }
        Ok(Dense {
            w,
            b,
            d_in,
            d_out: total,
        })
    }

    /// `x · W + b`, plus `residual` when given, for the `rows` rows of `x`.
    fn forward(&self, x: &[f32], rows: usize, residual: Option<&[f32]>) -> Vec<f32> {
        let mut y: Vec<f32> = match residual {
            Some(r) => r
                .chunks_exact(self.d_out)
                .flat_map(|row| row.iter().zip(&self.b).map(|(v, b)| v + b))
                .collect(),
            None => self.b.repeat(rows),
        };
        kernels::matmul(
            MatMut::new(&mut y, rows, self.d_out),
            Mat::new(x, rows, self.d_in),
            Mat::new(&self.w, self.d_in, self.d_out),
            1.0,
            true,
            rayon::current_num_threads(),
        );
        y
    }
}

struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

impl Norm {
    fn load(p: &Params, name: &str, h: usize) -> Result<Norm> {
        Ok(Norm {
            gamma: p.get(&format!("{name}.weight"), &[h])?.to_vec(),
            beta: p.get(&format!("{name}.bias"), &[h])?.to_vec(),
        })
    }

    fn apply(&self, x: &mut [f32], eps: f32) {
        let h = self.gamma.len();
        x.par_chunks_mut(h * 16)
            .for_each(|rows| kernels::layer_norm(rows, &self.gamma, &self.beta, eps));
    }
}

struct Layer {
    qkv: Dense,
    attn_out: Dense,
    attn_norm: Norm,
    ffn_in: Dense,
    ffn_out: Dense,
    ffn_norm: Norm,
}

/// The MiniLM-style encoder with its weights laid out for the CPU.
pub struct CpuEncoder {
    cfg: BertConfig,
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    emb_norm: Norm,
    layers: Vec<Layer>,
}

/// Where each sentence's tokens sit in a packed batch: `(first row, rows)`.
type Spans = [(usize, usize)];

/// Token states of sentences packed end to end (`[tokens, hidden]`, row-major), and where
/// each sentence's rows are.
pub type PackedStates = (Vec<f32>, Vec<(usize, usize)>);

impl CpuEncoder {
    /// The encoder of `p` (HuggingFace BERT tensor names) with `cfg`'s shape.
    pub fn load(p: &Params, cfg: &BertConfig) -> Result<CpuEncoder> {
        let (h, i) = (cfg.hidden, cfg.intermediate);
        if cfg.heads == 0 || h % cfg.heads != 0 {
            return Err(Error::BadInput(format!(
                "width {h} does not split into {} heads",
                cfg.heads
            )));
        }
        let layers = (0..cfg.layers)
            .map(|l| {
                let pre = format!("encoder.layer.{l}");
                let qkv: Vec<String> = ["query", "key", "value"]
                    .iter()
                    .map(|n| format!("{pre}.attention.self.{n}"))
                    .collect();
                Ok(Layer {
                    qkv: Dense::load(p, &qkv, h, h)?,
                    attn_out: Dense::load(p, &[format!("{pre}.attention.output.dense")], h, h)?,
                    attn_norm: Norm::load(p, &format!("{pre}.attention.output.LayerNorm"), h)?,
                    ffn_in: Dense::load(p, &[format!("{pre}.intermediate.dense")], h, i)?,
                    ffn_out: Dense::load(p, &[format!("{pre}.output.dense")], i, h)?,
                    ffn_norm: Norm::load(p, &format!("{pre}.output.LayerNorm"), h)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(CpuEncoder {
            word: p
                .get("embeddings.word_embeddings.weight", &[cfg.vocab, h])?
                .to_vec(),
            position: p
                .get(
                    "embeddings.position_embeddings.weight",
                    &[cfg.max_positions, h],
                )?
                .to_vec(),
            token_type: p
                .get("embeddings.token_type_embeddings.weight", &[2, h])?
                .to_vec(),
            emb_norm: Norm::load(p, "embeddings.LayerNorm", h)?,
            layers,
            cfg: cfg.clone(),
        })
    }

    /// Width of an embedding.
    pub fn hidden(&self) -> usize {
        self.cfg.hidden
    }

    /// Unit-length embeddings `[sentences, hidden]`, row-major, in input order, encoded
    /// `batch_size` sentences at a time.
    pub fn embed_all(&self, ids: &[Vec<u32>], batch_size: usize) -> Result<Vec<f32>> {
        let mut out = Vec::with_capacity(ids.len() * self.cfg.hidden);
        for batch in ids.chunks(batch_size.max(1)) {
            out.extend(self.embed(&batch.iter().map(Vec::as_slice).collect::<Vec<_>>())?);
        }
        Ok(out)
    }

    /// Unit-length embeddings `[sentences, hidden]`, row-major, of the token ids of each
    /// sentence (with `[CLS]`/`[SEP]`), encoded together as one batch.
    pub fn embed(&self, sentences: &[&[u32]]) -> Result<Vec<f32>> {
        let (x, spans) = self.states(sentences, self.layers.len())?;
        Ok(pool(&x, &spans, self.cfg.hidden))
    }

    /// Encoder layers.
    pub fn layer_count(&self) -> usize {
        self.layers.len()
    }

    /// The token states after the first `layers` encoder layers.
    pub fn states(&self, sentences: &[&[u32]], layers: usize) -> Result<PackedStates> {
        let h = self.cfg.hidden;
        if layers > self.layers.len() {
            return Err(Error::BadInput(format!(
                "{layers} layers asked of an encoder of {}",
                self.layers.len()
            )));
        }
        let mut spans = Vec::with_capacity(sentences.len());
        let mut x = Vec::new();
        for ids in sentences {
            if ids.len() > self.cfg.max_positions {
                return Err(Error::BadInput(format!(
                    "sentence has {} tokens; at most {}",
                    ids.len(),
                    self.cfg.max_positions
                )));
            }
            spans.push((x.len() / h, ids.len()));
            for (t, id) in ids.iter().enumerate() {
                let id = *id as usize;
                let word = self.word.get(id * h..(id + 1) * h).ok_or_else(|| {
                    Error::BadInput(format!("token id {id} is outside the vocabulary"))
                })?;
                let position = &self.position[t * h..(t + 1) * h];
                x.extend(
                    word.iter()
                        .zip(position)
                        .zip(&self.token_type[..h])
                        .map(|((w, p), y)| w + p + y),
                );
            }
        }
        let eps = self.cfg.eps as f32;
        self.emb_norm.apply(&mut x, eps);
        for layer in &self.layers[..layers] {
            x = self.layer(layer, &x, &spans, eps);
        }
        Ok((x, spans))
    }

    fn layer(&self, l: &Layer, x: &[f32], spans: &Spans, eps: f32) -> Vec<f32> {
        let rows = x.len() / self.cfg.hidden;
        let qkv = l.qkv.forward(x, rows, None);
        let ctx = self.attention(&qkv, spans);
        let mut a = l.attn_out.forward(&ctx, rows, Some(x));
        l.attn_norm.apply(&mut a, eps);
        let mut f = l.ffn_in.forward(&a, rows, None);
        f.par_chunks_mut(l.ffn_in.d_out * 8).for_each(kernels::gelu);
        let mut o = l.ffn_out.forward(&f, rows, Some(&a));
        l.ffn_norm.apply(&mut o, eps);
        o
    }

    /// Scaled dot-product attention of each sentence over its own tokens, every head:
    /// `qkv` holds `[q | k | v]` per row; the result is `[rows, hidden]`.
    fn attention(&self, qkv: &[f32], spans: &Spans) -> Vec<f32> {
        let (h, heads) = (self.cfg.hidden, self.cfg.heads);
        let dh = h / heads;
        let scale = 1.0 / (dh as f32).sqrt();
        let mut ctx = vec![0.0f32; qkv.len() / 3];
        let mut parts = Vec::with_capacity(spans.len());
        let mut rest = ctx.as_mut_slice();
        for (start, n) in spans {
            let (mine, tail) = rest.split_at_mut(n * h);
            parts.push((&qkv[start * 3 * h..(start + n) * 3 * h], *n, mine));
            rest = tail;
        }
        parts.into_par_iter().for_each(|(qkv, n, out)| {
            let mut scores = vec![0.0f32; n * n];
            let part =
                |p: usize, head: usize| Mat::strided(&qkv[p * h + head * dh..], n, dh, 3 * h);
            for head in 0..heads {
                let (q, k, v) = (part(0, head), part(1, head), part(2, head));
                kernels::matmul(MatMut::new(&mut scores, n, n), q, k.t(), scale, false, 1);
                scores.chunks_exact_mut(n.max(1)).for_each(kernels::softmax);
                let o = MatMut::strided(&mut out[head * dh..], n, dh, h);
                kernels::matmul(o, Mat::new(&scores, n, n), v, 1.0, false, 1);
            }
        });
        ctx
    }
}

/// Mean of each sentence's rows, scaled to unit length.
fn pool(x: &[f32], spans: &Spans, h: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; spans.len() * h];
    for ((start, n), mean) in spans.iter().zip(out.chunks_exact_mut(h)) {
        for t in *start..start + n {
            kernels::add_scaled(mean, 1.0, &x[t * h..(t + 1) * h]);
        }
        let count = (*n).max(1) as f32;
        mean.iter_mut().for_each(|v| *v /= count);
        let norm = mean.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
        mean.iter_mut().for_each(|v| *v /= norm);
    }
    out
}
