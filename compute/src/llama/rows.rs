//! Decoding on the CPU with the weights read in place, in the precision they were stored in
//! ([`Matrix`]: f32, or GGUF's 4- and 8-bit blocks): each projection reads the rows of its
//! `[out, in]` weight once, split across the cores, for one token (a matrix-vector product)
//! or for all the prompt's tokens at once (the prefill), with no packing. A one-row GEMM
//! through burn's CPU backend packs the whole f32 weight matrix on every call (for the output
//! layer of SmolLM2, 113 MB a token); this path reads each weight once per token, which is
//! what decoding costs.
//!
//! Same model as [`super::Llama`] (RMSNorm, HF rotate-half RoPE, grouped-query attention,
//! SwiGLU, tied or separate output layer) and the same sampler streams as
//! [`super::generate`]; results differ from the burn path only in f32 rounding, which the
//! decoder's teacher-forced check tolerates.

use gpuchain_jobspec::Sampling;
use gpuchain_kernels as kernels;
use rayon::prelude::*;
use std::sync::Mutex;

use super::forced::CHECKED_PROMPTS_BYTES;
use super::generate::{pick_token, row_rng};
use super::matrix::{Activations, Matrix, Stacked};
use super::model::LlamaConfig;
use super::prefix::PrefixCache;
use crate::gguf::llama::ROPE_FACTORS;
use crate::models::init::SplitMix64;
use crate::params::Params;
use crate::Result;

/// From this many tokens of one sequence in a pass (a prompt, a verifier's teacher-forced
/// pass), their attention is split across the cores.
const ATTEND_PARALLEL_TOKENS: usize = 4;

/// Tokens of a sequence whose attention goes through the cached keys and values together
/// (each run of keys read once for all of them).
const ATTEND_BLOCK: usize = 8;

/// From this many tokens in a pass, norms and SwiGLU are split across the cores too.
const PARALLEL_TOKENS: usize = 16;

struct Layer {
    attn_norm: Vec<f32>,
    /// Q, K and V.
    qkv: Stacked<3>,
    /// Q, K and V biases (Qwen2), where the checkpoint has them.
    q_bias: Option<Vec<f32>>,
    k_bias: Option<Vec<f32>>,
    v_bias: Option<Vec<f32>>,
    /// RMSNorm of each head's queries and keys before RoPE (Qwen3), where it has them.
    q_norm: Option<Vec<f32>>,
    k_norm: Option<Vec<f32>>,
    o: Matrix,
    mlp_norm: Vec<f32>,
    /// The gate and up projections.
    gate_up: Stacked<2>,
    down: Matrix,
}

/// Where a row decoder's weights come from, under their HuggingFace names (matrices
/// `[out, in]`): f32 [`Params`], or a GGUF file whose quantised blocks stay quantised
/// ([`crate::gguf::llama::GgufWeights`]).
pub trait DecoderWeights {
    /// The `rows × cols` matrix `name`.
    fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Matrix>;
    /// The vector `name` of `len` values.
    fn vector(&self, name: &str, len: usize) -> Result<Vec<f32>>;
    /// Whether the weights hold `name`.
    fn has(&self, name: &str) -> bool;
}

impl DecoderWeights for Params {
    fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Matrix> {
        Matrix::f32(rows, cols, self.get(name, &[rows, cols])?.to_vec())
    }

    fn vector(&self, name: &str, len: usize) -> Result<Vec<f32>> {
        Ok(self.get(name, &[len])?.to_vec())
    }

    fn has(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }
}

/// A decoder's weights as row-major matrices in their stored precision.
pub struct RowDecoder {
    cfg: LlamaConfig,
    embed: Matrix,
    layers: Vec<Layer>,
    norm: Vec<f32>,
    /// `None`: tied to `embed`.
    lm_head: Option<Matrix>,
    /// Angular frequency of each rotated pair of a head.
    rope_freqs: Vec<f32>,
    /// Keys and values of the prompts that teacher-forced passes with 8-bit activations
    /// have read, for later passes over prompts that begin the same way (`forced.rs`).
    pub(super) checked_prompts: Mutex<PrefixCache>,
}

/// Keys and values of one sequence, per layer: `[t, kv_heads × head_dim]`.
pub(super) struct Cache {
    k: Vec<Vec<f32>>,
    v: Vec<Vec<f32>>,
    /// Values a layer holds per token (`kv_heads × head_dim`).
    width: usize,
}

impl Cache {
    /// Tokens held.
    pub(super) fn len(&self) -> usize {
        self.k.first().map_or(0, |k| k.len() / self.width.max(1))
    }

    /// Whether it holds no token.
    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of the first `n` tokens' keys and values (all of them if it holds fewer).
    pub(super) fn first(&self, n: usize) -> Cache {
        let end = n.saturating_mul(self.width);
        let cut = |layers: &[Vec<f32>]| -> Vec<Vec<f32>> {
            layers
                .iter()
                .map(|l| l[..end.min(l.len())].to_vec())
                .collect()
        };
        Cache {
            k: cut(&self.k),
            v: cut(&self.v),
            width: self.width,
        }
    }

    /// Bytes of keys and values held.
    pub(super) fn bytes(&self) -> usize {
        self.k.iter().chain(&self.v).map(Vec::len).sum::<usize>() * 4
    }
}

/// `f(i, out_row, in_row)` for each row `i` of `out` and of `input` (`out_width` and
/// `in_width` values a row), split across the cores when `parallel` (each row whole on one
/// thread either way).
fn each_row(
    out: &mut [f32],
    input: &[f32],
    (out_width, in_width): (usize, usize),
    parallel: bool,
    f: impl Fn(usize, &mut [f32], &[f32]) + Sync + Send,
) {
    let (out_width, in_width) = (out_width.max(1), in_width.max(1));
    if parallel {
        out.par_chunks_exact_mut(out_width)
            .zip(input.par_chunks_exact(in_width))
            .enumerate()
            .for_each(|(i, (o, x))| f(i, o, x));
    } else {
        out.chunks_exact_mut(out_width)
            .zip(input.chunks_exact(in_width))
            .enumerate()
            .for_each(|(i, (o, x))| f(i, o, x));
    }
}

fn rms_norm(x: &[f32], weight: &[f32], eps: f32) -> Vec<f32> {
    let mut out = vec![0.0; x.len().min(weight.len())];
    rms_norm_into(x, weight, eps, &mut out);
    out
}

/// [`rms_norm`] into `out`; the sum of squares in vector lanes.
fn rms_norm_into(x: &[f32], weight: &[f32], eps: f32, out: &mut [f32]) {
    let scale = 1.0 / (kernels::dot_f32(x, x) / x.len() as f32 + eps).sqrt();
    for ((o, v), w) in out.iter_mut().zip(x).zip(weight) {
        *o = v * scale * w;
    }
}

/// `(sin, cos)` of pair `j`'s angle at position `pos`, angular frequency `freqs[j]`.
fn rope_angles(pos: usize, freqs: &[f32], half: usize) -> impl Iterator<Item = (f32, f32)> + '_ {
    freqs
        .iter()
        .take(half)
        .map(move |freq| (pos as f32 * freq).sin_cos())
}

/// HF "rotate half" on each head of `x` (`heads × d`) by the angles of one position
/// ([`rope_angles`]).
fn rope(x: &mut [f32], d: usize, angles: &[(f32, f32)]) {
    let half = d / 2;
    for head in x.chunks_exact_mut(d) {
        for (j, &(sin, cos)) in angles.iter().enumerate().take(half) {
            let (a, b) = (head[j], head[j + half]);
            head[j] = a * cos - b * sin;
            head[j + half] = b * cos + a * sin;
        }
    }
}

impl RowDecoder {
    /// The decoder of `cfg` from HuggingFace-named weights.
    pub fn new(cfg: LlamaConfig, w: &impl DecoderWeights) -> Result<RowDecoder> {
        crate::heap::keep_freed_for_reuse();
        let (h, i, d) = (cfg.hidden, cfg.intermediate, cfg.head_dim());
        let (q, kv) = (cfg.heads * d, cfg.kv_heads * d);
        let mut layers = Vec::with_capacity(cfg.layers);
        for l in 0..cfg.layers {
            let name = |s: &str| format!("model.layers.{l}.{s}.weight");
            let optional =
                |name: String, len| w.has(&name).then(|| w.vector(&name, len)).transpose();
            let bias = |s: &str| optional(format!("model.layers.{l}.{s}.bias"), kv);
            layers.push(Layer {
                attn_norm: w.vector(&name("input_layernorm"), h)?,
                qkv: Stacked::new([
                    w.matrix(&name("self_attn.q_proj"), q, h)?,
                    w.matrix(&name("self_attn.k_proj"), kv, h)?,
                    w.matrix(&name("self_attn.v_proj"), kv, h)?,
                ]),
                q_bias: optional(format!("model.layers.{l}.self_attn.q_proj.bias"), q)?,
                k_bias: bias("self_attn.k_proj")?,
                v_bias: bias("self_attn.v_proj")?,
                q_norm: optional(name("self_attn.q_norm"), d)?,
                k_norm: optional(name("self_attn.k_norm"), d)?,
                o: w.matrix(&name("self_attn.o_proj"), h, q)?,
                mlp_norm: w.vector(&name("post_attention_layernorm"), h)?,
                gate_up: Stacked::new([
                    w.matrix(&name("mlp.gate_proj"), i, h)?,
                    w.matrix(&name("mlp.up_proj"), i, h)?,
                ]),
                down: w.matrix(&name("mlp.down_proj"), h, i)?,
            });
        }
        let lm_head = if w.has("lm_head.weight") {
            Some(w.matrix("lm_head.weight", cfg.vocab, h)?)
        } else {
            None
        };
        let factors = if w.has(ROPE_FACTORS) {
            Some(w.vector(ROPE_FACTORS, d / 2)?)
        } else {
            None
        };
        Ok(RowDecoder {
            rope_freqs: cfg.rope_frequencies(factors.as_deref())?,
            embed: w.matrix("model.embed_tokens.weight", cfg.vocab, h)?,
            norm: w.vector("model.norm.weight", h)?,
            lm_head,
            layers,
            cfg,
            checked_prompts: Mutex::new(PrefixCache::new(CHECKED_PROMPTS_BYTES)),
        })
    }

    /// Whether every layer's products run as 8-bit integer products with `activations`:
    /// then a token's keys, values and hidden states are the same bits whichever tokens
    /// share its pass, and whether its prompt's beginning was read in an earlier one.
    pub(super) fn layers_int8(&self, activations: Activations) -> bool {
        self.layers.iter().all(|l| {
            l.qkv.int8(activations)
                && l.o.int8(activations)
                && l.gate_up.int8(activations)
                && l.down.int8(activations)
        })
    }

    /// Vocabulary size (entries of a logits row).
    pub fn vocab(&self) -> usize {
        self.cfg.vocab
    }

    /// Bytes the weights hold in memory.
    pub fn weight_bytes(&self) -> usize {
        let layer = |l: &Layer| {
            let optional = [&l.q_bias, &l.k_bias, &l.v_bias, &l.q_norm, &l.k_norm]
                .iter()
                .map(|v| v.as_ref().map_or(0, Vec::len))
                .sum::<usize>();
            (l.attn_norm.len() + l.mlp_norm.len() + optional) * 4
                + l.qkv.bytes()
                + l.gate_up.bytes()
                + l.o.bytes()
                + l.down.bytes()
        };
        self.embed.bytes()
            + self.norm.len() * 4
            + self.lm_head.as_ref().map_or(0, Matrix::bytes)
            + self.layers.iter().map(layer).sum::<usize>()
    }

    /// Feeds each sequence its tokens after what its cache holds, all sequences' tokens
    /// through each projection together (every weight is read once for all of them); returns
    /// the logits after the last token of each sequence.
    fn forward(&self, steps: &mut [(&[u32], &mut Cache)]) -> Vec<Vec<f32>> {
        self.forward_keeping(steps, &vec![1; steps.len()])
    }

    /// Values a layer's cache holds per token.
    pub(super) fn kv_width(&self) -> usize {
        self.cfg.kv_heads * self.cfg.head_dim()
    }

    /// [`Self::forward`], returning the logits after each of the last `keep[i]` tokens of
    /// sequence `i` (sequence by sequence, in order; none for a sequence whose `keep` is 0,
    /// so that a prompt read in chunks pays the output layer only after its last chunk).
    pub(super) fn forward_keeping(
        &self,
        steps: &mut [(&[u32], &mut Cache)],
        keep: &[usize],
    ) -> Vec<Vec<f32>> {
        self.forward_with(steps, keep, Activations::F32)
            .chunks_exact(self.cfg.vocab.max(1))
            .map(<[f32]>::to_vec)
            .collect()
    }

    /// [`Self::forward_keeping`] with every product's activations treated as `activations`
    /// says, the logits in one buffer (`vocab` values a kept position, in order).
    pub(super) fn forward_with(
        &self,
        steps: &mut [(&[u32], &mut Cache)],
        keep: &[usize],
        activations: Activations,
    ) -> Vec<f32> {
        let c = &self.cfg;
        let (h, d) = (c.hidden, c.head_dim());
        let (qw, kv) = (c.heads * d, c.kv_heads * d);
        let total: usize = steps.iter().map(|(t, _)| t.len()).sum();
        let mut x = vec![0.0f32; total * h];
        for (t, row) in steps
            .iter()
            .flat_map(|(t, _)| t.iter())
            .zip(x.chunks_exact_mut(h))
        {
            self.embed.row_into(*t as usize, row);
        }
        // Every row of `out` is written.
        let norm = |x: &[f32], w: &[f32], out: &mut [f32]| {
            each_row(out, x, (h, h), total >= PARALLEL_TOKENS, |_, o, r| {
                rms_norm_into(r, w, c.eps, o);
            });
        };
        // Each token's rotation angles, the same in every layer and head, worked out once.
        let half = d / 2;
        let mut angles = Vec::with_capacity(total * half);
        for (tokens, cache) in steps.iter() {
            let start = cache.k.first().map_or(0, |k| k.len() / kv.max(1));
            for i in 0..tokens.len() {
                angles.extend(rope_angles(start + i, &self.rope_freqs, half));
            }
        }
        // Products' results and what lies between them, their memory kept from one layer to
        // the next (each is written whole in every layer).
        let (mut proj, mut both) = (Vec::new(), Vec::new());
        let mut n = vec![0.0f32; total * h];
        let mut attn = vec![0.0f32; total * qw];
        let mut gate = vec![0.0f32; total * c.intermediate];
        for (l, w) in self.layers.iter().enumerate() {
            norm(&x, &w.attn_norm, &mut n);
            let [mut q, mut k, mut v] = w.qkv.apply(&n, activations);
            for (m, bias) in [
                (&mut q, &w.q_bias),
                (&mut k, &w.k_bias),
                (&mut v, &w.v_bias),
            ] {
                if let Some(bias) = bias {
                    for row in m.chunks_exact_mut(bias.len()) {
                        row.iter_mut().zip(bias).for_each(|(a, b)| *a += b);
                    }
                }
            }
            for (m, weight) in [(&mut q, &w.q_norm), (&mut k, &w.k_norm)] {
                if let Some(weight) = weight {
                    for head in m.chunks_exact_mut(d) {
                        let normed = rms_norm(head, weight, c.eps);
                        head.copy_from_slice(&normed);
                    }
                }
            }
            let mut first = 0;
            for (tokens, cache) in steps.iter_mut() {
                let (t, start) = (tokens.len(), cache.k[l].len() / kv);
                let rows = first..first + t;
                first += t;
                for (i, (qi, ki)) in q[rows.start * qw..rows.end * qw]
                    .chunks_exact_mut(qw)
                    .zip(k[rows.start * kv..rows.end * kv].chunks_exact_mut(kv))
                    .enumerate()
                {
                    let at = &angles[(rows.start + i) * half..(rows.start + i + 1) * half];
                    rope(qi, d, at);
                    rope(ki, d, at);
                }
                cache.k[l].extend_from_slice(&k[rows.start * kv..rows.end * kv]);
                cache.v[l].extend_from_slice(&v[rows.start * kv..rows.end * kv]);
                self.attend(
                    &q[rows.start * qw..rows.end * qw],
                    &cache.k[l],
                    &cache.v[l],
                    start,
                    &mut attn[rows.start * qw..rows.end * qw],
                );
            }
            w.o.apply_into(&attn, activations, &mut proj);
            x.iter_mut().zip(&proj).for_each(|(a, b)| *a += b);
            norm(&x, &w.mlp_norm, &mut n);
            // Gate and up side by side in one product where they are stacked: the
            // activation reads both halves of each token's row, with no split copied out.
            let inter = c.intermediate;
            let parallel = total >= PARALLEL_TOKENS;
            if !w
                .gate_up
                .apply_side_by_side_into(&n, activations, &mut both)
            {
                let [g, up] = w.gate_up.apply(&n, activations);
                both = g
                    .chunks_exact(inter)
                    .zip(up.chunks_exact(inter))
                    .flat_map(|(g, u)| g.iter().chain(u).copied())
                    .collect();
            }
            each_row(&mut gate, &both, (inter, 2 * inter), parallel, |_, o, b| {
                // The kernels' vectorised `e^x`, within 10⁻⁶ of libm's.
                kernels::swiglu(o, &b[..inter], &b[inter..])
            });
            w.down.apply_into(&gate, activations, &mut proj);
            x.iter_mut().zip(&proj).for_each(|(a, b)| *a += b);
        }
        let mut last = Vec::with_capacity(keep.iter().sum::<usize>() * h);
        let mut end = 0;
        for ((tokens, _), &keep) in steps.iter().zip(keep) {
            end += tokens.len();
            for row in x[(end - keep.min(tokens.len())) * h..end * h].chunks_exact(h) {
                last.extend(rms_norm(row, &self.norm, c.eps));
            }
        }
        if last.is_empty() {
            return Vec::new();
        }
        self.lm_head
            .as_ref()
            .unwrap_or(&self.embed)
            .apply_with(&last, activations)
    }

    /// Causal attention of one sequence's queries (`t × heads × head_dim`, at positions
    /// `start..`) over its cached keys and values, into `out`, in blocks of
    /// [`ATTEND_BLOCK`] tokens that share each read of the keys and values. A prompt's
    /// blocks (or a verifier's teacher-forced pass) are split across the cores; a token's
    /// sums are the same whichever block or thread runs them.
    fn attend(&self, q: &[f32], keys: &[f32], values: &[f32], start: usize, out: &mut [f32]) {
        let h = self.cfg.heads * self.cfg.head_dim();
        let tokens = q.len() / h.max(1);
        let block = |(b, out): (usize, &mut [f32])| {
            let first = b * ATTEND_BLOCK;
            let q = &q[first * h..first * h + out.len()];
            self.attend_block(q, keys, values, start + first, out);
        };
        if tokens >= ATTEND_PARALLEL_TOKENS {
            out.par_chunks_mut(ATTEND_BLOCK * h.max(1))
                .enumerate()
                .for_each(block);
        } else {
            out.chunks_mut(ATTEND_BLOCK * h.max(1))
                .enumerate()
                .for_each(block);
        }
    }

    /// Attention of consecutive tokens (`heads × head_dim` queries each, the first at
    /// position `at`) over the cached keys and values each sees.
    fn attend_block(&self, q: &[f32], keys: &[f32], values: &[f32], at: usize, out: &mut [f32]) {
        let c = &self.cfg;
        let d = c.head_dim();
        let (qw, kv) = (c.heads * d, c.kv_heads * d);
        let group = c.heads / c.kv_heads;
        let scale = 1.0 / (d as f32).sqrt();
        let seen: Vec<usize> = (1..=q.len() / qw.max(1)).map(|i| at + i).collect();
        let longest = seen.last().copied().unwrap_or(0);
        let mut scores = vec![0.0f32; seen.len() * longest];
        let mut sums = vec![0.0f32; seen.len() * d];
        for head in 0..c.heads {
            let kvh = head / group;
            let queries = kernels::StridedRows::new(&q[head * d..], qw, d);
            let head_keys = kernels::StridedRows::new(&keys[kvh * d..], kv, d);
            kernels::scaled_dots(queries, head_keys, scale, &seen, &mut scores);
            for (row, &n) in scores.chunks_exact_mut(longest.max(1)).zip(&seen) {
                kernels::softmax(&mut row[..n]);
            }
            sums.fill(0.0);
            let head_values = kernels::StridedRows::new(&values[kvh * d..], kv, d);
            kernels::add_weighted_rows(&mut sums, &scores, &seen, head_values);
            for (o, s) in out.chunks_exact_mut(qw).zip(sums.chunks_exact(d)) {
                o[head * d..(head + 1) * d].copy_from_slice(s);
            }
        }
    }

    pub(super) fn empty_cache(&self) -> Cache {
        Cache {
            k: vec![Vec::new(); self.cfg.layers],
            v: vec![Vec::new(); self.cfg.layers],
            width: self.kv_width(),
        }
    }

    /// Generates `new_tokens` after each of `rows` prompts (`prompts: rows × prompt_len`),
    /// row `r` sampling from the same stream as [`super::generate`] gives it. The rows are
    /// decoded together, one step of all of them per pass over the weights. Returns
    /// `rows × new_tokens` ids.
    pub fn generate(
        &self,
        prompts: &[u32],
        rows: usize,
        new_tokens: usize,
        sampling: &Sampling,
    ) -> Vec<u32> {
        self.generate_until(prompts, rows, new_tokens, sampling, &[])
    }

    /// [`Self::generate`], each row ending at the first of `stops` it generates: the row is
    /// no longer decoded and the rest of it repeats that token.
    pub fn generate_until(
        &self,
        prompts: &[u32],
        rows: usize,
        new_tokens: usize,
        sampling: &Sampling,
        stops: &[u32],
    ) -> Vec<u32> {
        let plen = prompts.len() / rows.max(1);
        let prompts: Vec<&[u32]> = prompts.chunks(plen.max(1)).collect();
        self.generate_rows(&prompts, new_tokens, sampling, stops)
    }

    /// [`Self::generate_until`] for prompts of any lengths, row `r` being `prompts[r]`.
    pub fn generate_rows(
        &self,
        prompts: &[&[u32]],
        new_tokens: usize,
        sampling: &Sampling,
        stops: &[u32],
    ) -> Vec<u32> {
        let mut caches: Vec<Cache> = prompts.iter().map(|_| self.empty_cache()).collect();
        let mut rngs: Vec<SplitMix64> = (0..prompts.len()).map(|r| row_rng(sampling, r)).collect();
        let mut steps: Vec<(&[u32], &mut Cache)> =
            prompts.iter().copied().zip(caches.iter_mut()).collect();
        let mut logits = self.forward(&mut steps);
        let mut tokens: Vec<Vec<u32>> = vec![Vec::with_capacity(new_tokens); prompts.len()];
        // Rows still generating; `logits[i]` belongs to the i-th of them.
        let mut live: Vec<usize> = (0..prompts.len()).collect();
        for n in 0..new_tokens {
            for (&r, l) in live.iter().zip(&logits) {
                tokens[r].push(pick_token(l, sampling, &mut rngs[r]));
            }
            live.retain(|&r| !stops.contains(&tokens[r][n]));
            if n + 1 < new_tokens && !live.is_empty() {
                let mut steps: Vec<(&[u32], &mut Cache)> = tokens
                    .iter()
                    .zip(caches.iter_mut())
                    .enumerate()
                    .filter(|(r, _)| live.contains(r))
                    .map(|(_, (row, cache))| (&row[n..n + 1], cache))
                    .collect();
                logits = self.forward(&mut steps);
            }
        }
        for row in &mut tokens {
            if let Some(&stop) = row.last() {
                row.resize(new_tokens, stop);
            }
        }
        tokens.concat()
    }
}
