//! Decoding on the CPU with the weights read in place: each projection reads the rows of its
//! `[out, in]` weight once, split across the cores, for one token (a matrix-vector product)
//! or for all the prompt's tokens at once (the prefill), with no packing. A one-row GEMM through burn's CPU backend
//! packs the whole weight matrix on every call (for the output layer of SmolLM2, 113 MB a
//! token); this path reads each weight once per token, which is what decoding costs.
//!
//! Same model as [`super::Llama`] (RMSNorm, HF rotate-half RoPE, grouped-query attention,
//! SwiGLU, tied or separate output layer) and the same sampler streams as
//! [`super::generate`]; results differ from the burn path only in f32 rounding, which the
//! decoder's teacher-forced check tolerates.

use gpuchain_jobspec::Sampling;

use super::generate::pick_token;
use super::model::LlamaConfig;
use crate::models::init::SplitMix64;
use crate::params::Params;
use crate::Result;

/// Matrices at least this large (rows × cols) are split across threads.
const PARALLEL_MIN: usize = 1 << 18;

struct Layer {
    attn_norm: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    o: Vec<f32>,
    mlp_norm: Vec<f32>,
    gate: Vec<f32>,
    up: Vec<f32>,
    down: Vec<f32>,
}

/// A decoder's weights as row-major f32 matrices.
pub struct RowDecoder {
    cfg: LlamaConfig,
    embed: Vec<f32>,
    layers: Vec<Layer>,
    norm: Vec<f32>,
    /// `None`: tied to `embed`.
    lm_head: Option<Vec<f32>>,
    threads: usize,
}

/// Keys and values of one sequence, per layer: `[t, kv_heads × head_dim]`.
struct Cache {
    k: Vec<Vec<f32>>,
    v: Vec<Vec<f32>>,
}

/// `a · b` in eight running sums, so that the compiler can keep them in one vector register
/// (a single running sum is a chain of dependent adds it may not reorder).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ac, bc) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ac
        .remainder()
        .iter()
        .zip(bc.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ac.zip(bc) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// `out[r] = w[r, :] · x` for every row `r` of `w` (`out.len()` rows of `x.len()` values).
fn matvec(w: &[f32], x: &[f32], out: &mut [f32], threads: usize) {
    let cols = x.len();
    let dot = |row: &[f32]| dot(row, x);
    if threads <= 1 || out.len() * cols < PARALLEL_MIN {
        for (o, row) in out.iter_mut().zip(w.chunks_exact(cols)) {
            *o = dot(row);
        }
        return;
    }
    let per = out.len().div_ceil(threads);
    std::thread::scope(|s| {
        for (chunk, rows) in out.chunks_mut(per).zip(w.chunks(per * cols)) {
            s.spawn(move || {
                for (o, row) in chunk.iter_mut().zip(rows.chunks_exact(cols)) {
                    *o = dot(row);
                }
            });
        }
    });
}

/// `out[t, r] = w[r, :] · xs[t, :]` for `t` tokens (`xs`: `t × cols`, `out`: `t × rows`):
/// each weight row is read once for all the tokens (a prompt's prefill).
fn matmat(w: &[f32], xs: &[f32], cols: usize, out: &mut [f32], threads: usize) {
    let tokens = xs.len() / cols.max(1);
    let rows = out.len() / tokens.max(1);
    let per = if threads <= 1 || rows * cols < PARALLEL_MIN {
        rows
    } else {
        rows.div_ceil(threads)
    };
    let rows_of = |w: &[f32]| -> Vec<f32> {
        let mut local = vec![0.0; w.len() / cols * tokens];
        for (i, row) in w.chunks_exact(cols).enumerate() {
            for (t, x) in xs.chunks_exact(cols).enumerate() {
                local[i * tokens + t] = dot(row, x);
            }
        }
        local
    };
    let parts: Vec<(usize, Vec<f32>)> = std::thread::scope(|s| {
        let handles: Vec<_> = w
            .chunks(per * cols)
            .enumerate()
            .map(|(c, chunk)| s.spawn(move || (c * per, rows_of(chunk))))
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    for (first, local) in parts {
        for (i, values) in local.chunks_exact(tokens).enumerate() {
            for (t, v) in values.iter().enumerate() {
                out[t * rows + first + i] = *v;
            }
        }
    }
}

fn rms_norm(x: &[f32], weight: &[f32], eps: f32) -> Vec<f32> {
    let mean = x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32;
    let scale = 1.0 / (mean + eps).sqrt();
    x.iter().zip(weight).map(|(v, w)| v * scale * w).collect()
}

/// HF "rotate half" on each head of `x` (`heads × d`) at position `pos`.
fn rope(x: &mut [f32], d: usize, pos: usize, theta: f32) {
    let half = d / 2;
    for head in x.chunks_exact_mut(d) {
        for j in 0..half {
            let freq = 1.0 / theta.powf((2 * j) as f32 / d as f32);
            let (sin, cos) = (pos as f32 * freq).sin_cos();
            let (a, b) = (head[j], head[j + half]);
            head[j] = a * cos - b * sin;
            head[j + half] = b * cos + a * sin;
        }
    }
}

impl RowDecoder {
    /// The decoder of `cfg` from HuggingFace-named weights.
    pub fn new(cfg: LlamaConfig, p: &Params) -> Result<RowDecoder> {
        let (h, i) = (cfg.hidden, cfg.intermediate);
        let kv = cfg.kv_heads * (h / cfg.heads.max(1));
        let get =
            |name: String, dims: &[usize]| -> Result<Vec<f32>> { Ok(p.get(&name, dims)?.to_vec()) };
        let mut layers = Vec::with_capacity(cfg.layers);
        for l in 0..cfg.layers {
            let pre = format!("model.layers.{l}");
            layers.push(Layer {
                attn_norm: get(format!("{pre}.input_layernorm.weight"), &[h])?,
                q: get(format!("{pre}.self_attn.q_proj.weight"), &[h, h])?,
                k: get(format!("{pre}.self_attn.k_proj.weight"), &[kv, h])?,
                v: get(format!("{pre}.self_attn.v_proj.weight"), &[kv, h])?,
                o: get(format!("{pre}.self_attn.o_proj.weight"), &[h, h])?,
                mlp_norm: get(format!("{pre}.post_attention_layernorm.weight"), &[h])?,
                gate: get(format!("{pre}.mlp.gate_proj.weight"), &[i, h])?,
                up: get(format!("{pre}.mlp.up_proj.weight"), &[i, h])?,
                down: get(format!("{pre}.mlp.down_proj.weight"), &[h, i])?,
            });
        }
        let lm_head = if p.tensors.contains_key("lm_head.weight") {
            Some(get("lm_head.weight".into(), &[cfg.vocab, h])?)
        } else {
            None
        };
        Ok(RowDecoder {
            embed: get("model.embed_tokens.weight".into(), &[cfg.vocab, h])?,
            norm: get("model.norm.weight".into(), &[h])?,
            lm_head,
            layers,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cfg,
        })
    }

    /// `w` (`rows × cols`) applied to each of the tokens in `xs` (`t × cols`).
    fn project(&self, w: &[f32], xs: &[f32], cols: usize) -> Vec<f32> {
        let (t, rows) = (xs.len() / cols, w.len() / cols);
        let mut out = vec![0.0; t * rows];
        if t == 1 {
            matvec(w, xs, &mut out, self.threads);
        } else {
            matmat(w, xs, cols, &mut out, self.threads);
        }
        out
    }

    /// Feeds `tokens` at positions `start..` (the cache holds positions `0..start`); returns
    /// the logits after the last of them.
    fn forward(&self, tokens: &[u32], start: usize, cache: &mut Cache) -> Vec<f32> {
        let c = &self.cfg;
        let (h, d) = (c.hidden, c.hidden / c.heads);
        let kv = c.kv_heads * d;
        let group = c.heads / c.kv_heads;
        let scale = 1.0 / (d as f32).sqrt();
        let mut x: Vec<f32> = tokens
            .iter()
            .flat_map(|t| {
                self.embed[*t as usize * h..(*t as usize + 1) * h]
                    .iter()
                    .copied()
            })
            .collect();
        let norm = |x: &[f32], w: &[f32]| -> Vec<f32> {
            x.chunks_exact(h)
                .flat_map(|row| rms_norm(row, w, c.eps))
                .collect()
        };
        for (l, w) in self.layers.iter().enumerate() {
            let n = norm(&x, &w.attn_norm);
            let mut q = self.project(&w.q, &n, h);
            let mut k = self.project(&w.k, &n, h);
            let v = self.project(&w.v, &n, h);
            for (i, (qi, ki)) in q
                .chunks_exact_mut(h)
                .zip(k.chunks_exact_mut(kv))
                .enumerate()
            {
                rope(qi, d, start + i, c.rope_theta);
                rope(ki, d, start + i, c.rope_theta);
            }
            cache.k[l].extend_from_slice(&k);
            cache.v[l].extend_from_slice(&v);
            let (keys, values) = (&cache.k[l], &cache.v[l]);
            let mut attn = vec![0.0; q.len()];
            for (i, (qi, out)) in q.chunks_exact(h).zip(attn.chunks_exact_mut(h)).enumerate() {
                let seen = start + i + 1;
                for head in 0..c.heads {
                    let kvh = head / group;
                    let qh = &qi[head * d..(head + 1) * d];
                    let mut scores: Vec<f32> = (0..seen)
                        .map(|s| {
                            let key = &keys[s * kv + kvh * d..s * kv + (kvh + 1) * d];
                            qh.iter().zip(key).map(|(a, b)| a * b).sum::<f32>() * scale
                        })
                        .collect();
                    let top = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let mut total = 0.0;
                    for s in &mut scores {
                        *s = (*s - top).exp();
                        total += *s;
                    }
                    let out = &mut out[head * d..(head + 1) * d];
                    for (s, weight) in scores.iter().enumerate() {
                        let value = &values[s * kv + kvh * d..s * kv + (kvh + 1) * d];
                        for (o, val) in out.iter_mut().zip(value) {
                            *o += weight / total * val;
                        }
                    }
                }
            }
            let proj = self.project(&w.o, &attn, h);
            x.iter_mut().zip(&proj).for_each(|(a, b)| *a += b);
            let n = norm(&x, &w.mlp_norm);
            let mut gate = self.project(&w.gate, &n, h);
            let up = self.project(&w.up, &n, h);
            for (g, u) in gate.iter_mut().zip(&up) {
                *g = *g / (1.0 + (-*g).exp()) * u;
            }
            let proj = self.project(&w.down, &gate, c.intermediate);
            x.iter_mut().zip(&proj).for_each(|(a, b)| *a += b);
        }
        let last = &x[x.len() - h..];
        let n = rms_norm(last, &self.norm, c.eps);
        let mut logits = vec![0.0; c.vocab];
        matvec(
            self.lm_head.as_deref().unwrap_or(&self.embed),
            &n,
            &mut logits,
            self.threads,
        );
        logits
    }

    /// Generates `new_tokens` after each of `rows` prompts (`prompts: rows × prompt_len`),
    /// row `r` sampling from the same stream as [`super::generate`] gives it. Returns
    /// `rows × new_tokens` ids.
    pub fn generate(
        &self,
        prompts: &[u32],
        rows: usize,
        new_tokens: usize,
        sampling: &Sampling,
    ) -> Vec<u32> {
        let plen = prompts.len() / rows.max(1);
        let seed = match sampling {
            Sampling::Seeded { seed, .. } => *seed,
            Sampling::Greedy => 0,
        };
        let mut out = Vec::with_capacity(rows * new_tokens);
        for (r, prompt) in prompts.chunks(plen.max(1)).enumerate() {
            let mut rng = SplitMix64::new(seed ^ (r as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut cache = Cache {
                k: vec![Vec::new(); self.cfg.layers],
                v: vec![Vec::new(); self.cfg.layers],
            };
            let mut logits = self.forward(prompt, 0, &mut cache);
            for n in 0..new_tokens {
                let next = pick_token(&logits, sampling, &mut rng);
                out.push(next);
                if n + 1 < new_tokens {
                    logits = self.forward(&[next], plen + n, &mut cache);
                }
            }
        }
        out
    }
}
