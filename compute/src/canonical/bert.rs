//! Canonical BERT sentence embedder (same maths as [`crate::embed::model`]).

use super::math::{gelu, layer_norm, linear, softmax_rows};
use crate::embed::{Batch, BertConfig};
use crate::params::Params;
use crate::{Error, Result};

/// Unit-length embeddings `[rows, hidden]`, row-major. Each sentence is encoded alone over
/// its real tokens only, so padding never enters the arithmetic.
pub fn embed(p: &Params, cfg: &BertConfig, batch: &Batch) -> Result<Vec<f32>> {
    let h = cfg.hidden;
    let word = p.get("embeddings.word_embeddings.weight", &[cfg.vocab, h])?;
    let pos = p.get(
        "embeddings.position_embeddings.weight",
        &[cfg.max_positions, h],
    )?;
    let typ = p.get("embeddings.token_type_embeddings.weight", &[2, h])?;
    let mut out = Vec::with_capacity(batch.rows * h);
    for r in 0..batch.rows {
        let row_ids = &batch.ids[r * batch.len..(r + 1) * batch.len];
        let n = batch.mask[r * batch.len..(r + 1) * batch.len]
            .iter()
            .filter(|m| **m == 1)
            .count();
        if n > cfg.max_positions {
            return Err(Error::BadInput(format!(
                "sentence has {n} tokens; at most {}",
                cfg.max_positions
            )));
        }
        let mut x = vec![0.0f32; n * h];
        for t in 0..n {
            let id = row_ids[t] as usize;
            if id >= cfg.vocab {
                return Err(Error::BadInput(format!(
                    "token id {id} is outside the vocabulary"
                )));
            }
            for j in 0..h {
                x[t * h + j] = word[id * h + j] + pos[t * h + j] + typ[j];
            }
        }
        ln(p, "embeddings.LayerNorm", &mut x, h, cfg.eps as f32)?;
        for l in 0..cfg.layers {
            x = layer(p, cfg, l, &x, n)?;
        }
        let mut mean = vec![0.0f32; h];
        for t in 0..n {
            for j in 0..h {
                mean[j] += x[t * h + j];
            }
        }
        let mut sq = 0.0f32;
        for v in mean.iter_mut() {
            *v /= n as f32;
            sq += *v * *v;
        }
        let norm = libm::sqrtf(sq).max(1e-12);
        out.extend(mean.iter().map(|v| v / norm));
    }
    Ok(out)
}

fn ln(p: &Params, name: &str, x: &mut [f32], h: usize, eps: f32) -> Result<()> {
    let g = p.get(&format!("{name}.weight"), &[h])?;
    let b = p.get(&format!("{name}.bias"), &[h])?;
    layer_norm(x, h, g, b, eps);
    Ok(())
}

fn dense(
    p: &Params,
    name: &str,
    x: &[f32],
    rows: usize,
    d_in: usize,
    d_out: usize,
) -> Result<Vec<f32>> {
    let w = p.get(&format!("{name}.weight"), &[d_out, d_in])?;
    let b = p.get(&format!("{name}.bias"), &[d_out])?;
    Ok(linear(x, rows, w, Some(b), d_in, d_out))
}

fn layer(p: &Params, cfg: &BertConfig, l: usize, x: &[f32], n: usize) -> Result<Vec<f32>> {
    let (h, heads) = (cfg.hidden, cfg.heads);
    let dh = h / heads;
    let pre = format!("encoder.layer.{l}");
    let q = dense(p, &format!("{pre}.attention.self.query"), x, n, h, h)?;
    let k = dense(p, &format!("{pre}.attention.self.key"), x, n, h, h)?;
    let v = dense(p, &format!("{pre}.attention.self.value"), x, n, h, h)?;
    let scale = 1.0 / libm::sqrtf(dh as f32);
    let mut ctx = vec![0.0f32; n * h];
    let mut scores = vec![0.0f32; n];
    for hd in 0..heads {
        for i in 0..n {
            for j in 0..n {
                let mut acc = 0.0f32;
                for d in 0..dh {
                    acc += q[i * h + hd * dh + d] * k[j * h + hd * dh + d];
                }
                scores[j] = acc * scale;
            }
            softmax_rows(&mut scores, n);
            for d in 0..dh {
                let mut acc = 0.0f32;
                for j in 0..n {
                    acc += scores[j] * v[j * h + hd * dh + d];
                }
                ctx[i * h + hd * dh + d] = acc;
            }
        }
    }
    let mut a = dense(p, &format!("{pre}.attention.output.dense"), &ctx, n, h, h)?;
    for (ai, xi) in a.iter_mut().zip(x) {
        *ai += *xi;
    }
    ln(
        p,
        &format!("{pre}.attention.output.LayerNorm"),
        &mut a,
        h,
        cfg.eps as f32,
    )?;
    let mut f = dense(
        p,
        &format!("{pre}.intermediate.dense"),
        &a,
        n,
        h,
        cfg.intermediate,
    )?;
    gelu(&mut f);
    let mut o = dense(
        p,
        &format!("{pre}.output.dense"),
        &f,
        n,
        cfg.intermediate,
        h,
    )?;
    for (oi, ai) in o.iter_mut().zip(&a) {
        *oi += *ai;
    }
    ln(
        p,
        &format!("{pre}.output.LayerNorm"),
        &mut o,
        h,
        cfg.eps as f32,
    )?;
    Ok(o)
}
