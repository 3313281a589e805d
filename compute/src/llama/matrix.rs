//! The row decoder's weight matrices, kept in the precision they were stored in: f32, or
//! ggml's 32-value blocks (Q4_0, Q4_1, Q8_0) with each block's f16 scale (and minimum)
//! widened to f32 on load, or its K-quant super-blocks of 256 values: Q4_K as the 32-value
//! 4-bit blocks its sub-blocks are (exactly), Q5_K and Q6_K as stored, a row widened when it
//! is used. Decoding reads every weight once a token, so its speed is the speed of reading
//! the weights: 4-bit blocks are a sixth of the bytes of f32.
//!
//! Products dequantise inside the dot product (a few tokens) or widen a block of rows for a
//! tiled matrix product (6 tokens or more), and keep the activations in f32. A verifier's
//! teacher-forced pass may ask for [`Activations::Int8`]: 4- and 8-bit rows then meet the
//! tokens quantised to 8 bits a 32-value block in integer dot products (AVX-512 VNNI, or
//! AVX2's byte multiply-adds, to the same bits; `gpuchain_kernels::int8_product`), as
//! llama.cpp runs every product. That pass is 1.6–1.8 times as fast with VNNI, about 1.5
//! times with AVX2 alone, and its logits sit one activation rounding from those the answer was
//! picked from: enough to move a near-tie, so generation keeps f32 and a fault the fast pass
//! finds is confirmed in f32 (`check.rs`).

use gpuchain_kernels::{self as kernels, Mat, MatMut, BLOCK};
use rayon::prelude::*;

use crate::gguf::dequant::{self, kind};
use crate::{Error, Result};

/// Matrices at least this large (rows × cols) are split across threads.
const PARALLEL_MIN: usize = 1 << 16;

/// From this many tokens on (a prompt's prefill, a verifier's teacher-forced pass, a
/// decoding batch of 6 or more), f32 and K-quant rows are multiplied with all the tokens as
/// one matrix product (K-quant rows widened to f32 a block of rows at a time): the tiled
/// product keeps values in registers that row-by-row dot products load again for every
/// token. Measured on 2 cores, one thread, 7 sequences decode at 74 tokens/s as a product
/// against 58 with each row widened once and dotted with each token.
const PRODUCT_MIN_TOKENS: usize = 6;

/// Up to this many tokens, 4- and 8-bit rows are dotted with the tokens in their blocks,
/// each block unpacked once for up to six tokens; from one more, they are widened and
/// multiplied as a product too. Measured on 2 cores, 2 threads (decoding tokens/s across the
/// sequences, dotted against product): 6 sequences 180 against 139, 8 sequences 193–200
/// against 131–173, 12 sequences about equal (189–197), 24 sequences 195 against 239.
const BLOCK_DOTS_MAX_TOKENS: usize = 11;

/// Rows widened at once for a product: a block of widened weights stays in the L2 cache.
const PRODUCT_ROWS: usize = 256;

/// From this many tokens, a product's register tiles run along the weight rows rather than
/// along the tokens.
const TILES_ALONG_ROWS: usize = 16;

/// Matrices of up to this many values are packed whole for integer products, once for all
/// the threads (4 MB packed: a layer's projections); a larger one (an output layer over a
/// large vocabulary) is packed by each thread for its own tokens, a block at a time.
const PACKED_WHOLE_MAX: usize = 1 << 22;

thread_local! {
    /// A thread's block of rows packed for an integer product (split by rows, or a large
    /// matrix's split by tokens), kept from one product to the next: packing then writes
    /// into memory the thread has already touched rather than into fresh pages each time.
    static PACKED: std::cell::RefCell<kernels::PackedRows> =
        std::cell::RefCell::new(kernels::PackedRows::default());
}

thread_local! {
    /// The packed blocks of a matrix packed whole, kept from one product to the next for the
    /// same reason (a few MB: the largest such matrix): one set a calling thread, so that
    /// checks running at once on threads of their own each keep theirs. A product that
    /// finds its thread's set taken (a pass nested in another's wait) packs into new ones.
    static PACKED_WHOLE: std::cell::RefCell<Vec<kernels::PackedRows>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Tokens quantised to 8 bits for integer products: a long pass's tokens split across the
/// threads (between two products a serial step leaves the other cores waiting).
fn quantise(xs: &[f32], cols: usize) -> kernels::QuantisedTokens {
    let tokens = xs.len() / cols.max(1);
    let threads = rayon::current_num_threads();
    if tokens < QUANTISE_PARALLEL_TOKENS || threads < 2 {
        return kernels::QuantisedTokens::new(xs, cols);
    }
    let parts: Vec<kernels::QuantisedTokens> = xs
        .par_chunks(tokens.div_ceil(threads) * cols)
        .map(|part| kernels::QuantisedTokens::new(part, cols))
        .collect();
    kernels::QuantisedTokens::join(&parts)
}

/// From this many tokens, quantising is split across threads.
const QUANTISE_PARALLEL_TOKENS: usize = 64;

/// Values in a K-quant super-block.
const K_BLOCK: usize = 256;

/// What a product does with its activations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activations {
    /// f32 in every product: how generation runs, and the pass that confirms a fault.
    F32,
    /// 4- and 8-bit rows meet the tokens quantised to 8 bits a 32-value block, in integer
    /// dot products where the CPU has them (AVX-512 VNNI, or AVX2), however many tokens;
    /// f32 elsewhere. A verifier's fast pass.
    Int8,
}

enum Store {
    F32(Vec<f32>),
    /// `q × scale + min` with 4-bit `q`; byte `j` of a block's 16 holds value `j` in its low
    /// nibble and value `j + 16` in its high nibble (ggml's layout). Q4_0 is `min = −8 × scale`.
    Q4 {
        scales: Vec<f32>,
        mins: Vec<f32>,
        qs: Vec<u8>,
    },
    /// `q × scale` with signed 8-bit `q`.
    Q8 {
        scales: Vec<f32>,
        qs: Vec<i8>,
    },
    /// Q5_K or Q6_K super-blocks as stored, `row_bytes` a row.
    KQuant {
        kind: u32,
        row_bytes: usize,
        data: Vec<u8>,
    },
}

/// A `rows × cols` row-major weight matrix.
pub struct Matrix {
    rows: usize,
    cols: usize,
    store: Store,
}

fn f16_at(b: &[u8], at: usize) -> f32 {
    half::f16::from_le_bytes([b[at], b[at + 1]]).to_f32()
}

impl Matrix {
    /// A matrix of f32 values.
    pub fn f32(rows: usize, cols: usize, data: Vec<f32>) -> Result<Matrix> {
        if rows.checked_mul(cols) != Some(data.len()) {
            return Err(Error::BadWeights(format!(
                "{} values for a {rows} × {cols} matrix",
                data.len()
            )));
        }
        Ok(Matrix {
            rows,
            cols,
            store: Store::F32(data),
        })
    }

    /// A matrix stored as ggml type `ggml_kind` in `data`. Q4_0, Q4_1, Q8_0 and the
    /// K-quants stay in their blocks; other types are widened to f32.
    pub fn from_ggml(ggml_kind: u32, data: &[u8], rows: usize, cols: usize) -> Result<Matrix> {
        let numel = rows
            .checked_mul(cols)
            .ok_or_else(|| Error::BadWeights("matrix too large".into()))?;
        let blocked = match ggml_kind {
            kind::Q4_0 | kind::Q4_1 | kind::Q8_0 => cols % BLOCK == 0,
            kind::Q4_K | kind::Q5_K | kind::Q6_K => cols % K_BLOCK == 0,
            _ => false,
        };
        if !blocked {
            return Matrix::f32(rows, cols, dequant::to_f32(ggml_kind, data, numel)?);
        }
        if dequant::byte_size(ggml_kind, numel) != Some(data.len()) {
            return Err(Error::BadWeights(format!(
                "GGUF: {} bytes for {numel} values of type {ggml_kind}",
                data.len()
            )));
        }
        let blocks = numel / BLOCK;
        let store = match ggml_kind {
            kind::Q4_K => {
                let mut scales = Vec::with_capacity(blocks);
                let mut mins = Vec::with_capacity(blocks);
                let mut qs = Vec::with_capacity(numel / 2);
                dequant::q4_k_as_q4_blocks(data, &mut scales, &mut mins, &mut qs);
                Store::Q4 { scales, mins, qs }
            }
            kind::Q5_K | kind::Q6_K => Store::KQuant {
                kind: ggml_kind,
                row_bytes: dequant::byte_size(ggml_kind, cols).unwrap_or(0),
                data: data.to_vec(),
            },
            kind::Q8_0 => {
                let mut scales = Vec::with_capacity(blocks);
                let mut qs = Vec::with_capacity(numel);
                for b in data.chunks_exact(2 + BLOCK) {
                    scales.push(f16_at(b, 0));
                    qs.extend(b[2..].iter().map(|q| *q as i8));
                }
                Store::Q8 { scales, qs }
            }
            _ => {
                let q4_1 = ggml_kind == kind::Q4_1;
                let per = if q4_1 { 20 } else { 18 };
                let mut scales = Vec::with_capacity(blocks);
                let mut mins = Vec::with_capacity(blocks);
                let mut qs = Vec::with_capacity(numel / 2);
                for b in data.chunks_exact(per) {
                    let d = f16_at(b, 0);
                    scales.push(d);
                    mins.push(if q4_1 { f16_at(b, 2) } else { -8.0 * d });
                    qs.extend_from_slice(&b[per - 16..]);
                }
                Store::Q4 { scales, mins, qs }
            }
        };
        Ok(Matrix { rows, cols, store })
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Bytes the matrix holds in memory.
    pub fn bytes(&self) -> usize {
        match &self.store {
            Store::F32(v) => v.len() * 4,
            Store::Q4 { scales, mins, qs } => (scales.len() + mins.len()) * 4 + qs.len(),
            Store::Q8 { scales, qs } => scales.len() * 4 + qs.len(),
            Store::KQuant { data, .. } => data.len(),
        }
    }

    /// The rows of `parts` one after another, as one matrix, where they have the same
    /// columns and are stored alike (the same type, and for K-quants the same row size);
    /// else `parts` back.
    pub fn stack(parts: Vec<Matrix>) -> std::result::Result<Matrix, Vec<Matrix>> {
        let Some(first) = parts.first() else {
            return Err(parts);
        };
        let cols = first.cols;
        let k_layout = |m: &Matrix| match &m.store {
            Store::KQuant {
                kind, row_bytes, ..
            } => Some((*kind, *row_bytes)),
            _ => None,
        };
        let alike = parts.iter().all(|m| {
            m.cols == cols
                && std::mem::discriminant(&m.store) == std::mem::discriminant(&first.store)
                && k_layout(m) == k_layout(first)
        });
        if !alike {
            return Err(parts);
        }
        // Every part is stored as the first is (checked above), so each one's data is taken.
        fn join<T: Copy>(parts: &[Matrix], data: impl Fn(&Store) -> Option<&[T]>) -> Vec<T> {
            let len = parts
                .iter()
                .map(|m| data(&m.store).map_or(0, <[T]>::len))
                .sum();
            // Exactly as long as the parts: the weights stay resident for the model's life.
            let mut out = Vec::with_capacity(len);
            for m in parts {
                out.extend_from_slice(data(&m.store).unwrap_or_default());
            }
            out
        }
        let store = match &first.store {
            Store::F32(_) => Store::F32(join(&parts, |s| match s {
                Store::F32(v) => Some(v.as_slice()),
                _ => None,
            })),
            Store::Q4 { .. } => {
                fn q4(s: &Store) -> Option<(&[f32], &[f32], &[u8])> {
                    match s {
                        Store::Q4 { scales, mins, qs } => Some((scales, mins, qs)),
                        _ => None,
                    }
                }
                Store::Q4 {
                    scales: join(&parts, |s| q4(s).map(|p| p.0)),
                    mins: join(&parts, |s| q4(s).map(|p| p.1)),
                    qs: join(&parts, |s| q4(s).map(|p| p.2)),
                }
            }
            Store::Q8 { .. } => {
                fn q8(s: &Store) -> Option<(&[f32], &[i8])> {
                    match s {
                        Store::Q8 { scales, qs } => Some((scales, qs)),
                        _ => None,
                    }
                }
                Store::Q8 {
                    scales: join(&parts, |s| q8(s).map(|p| p.0)),
                    qs: join(&parts, |s| q8(s).map(|p| p.1)),
                }
            }
            Store::KQuant {
                kind, row_bytes, ..
            } => Store::KQuant {
                kind: *kind,
                row_bytes: *row_bytes,
                data: join(&parts, |s| match s {
                    Store::KQuant { data, .. } => Some(data.as_slice()),
                    _ => None,
                }),
            },
        };
        Ok(Matrix {
            rows: parts.iter().map(|m| m.rows).sum(),
            cols,
            store,
        })
    }

    /// Reorders the rows: row `i` becomes the old row `order[i]`.
    pub fn reorder_rows(&mut self, order: &[usize]) {
        fn gather<T: Copy>(v: &mut Vec<T>, order: &[usize], per_row: usize) {
            let mut out = Vec::with_capacity(v.len());
            for &r in order {
                out.extend_from_slice(&v[r * per_row..(r + 1) * per_row]);
            }
            *v = out;
        }
        let (cols, blocks) = (self.cols, self.cols / BLOCK);
        match &mut self.store {
            Store::F32(v) => gather(v, order, cols),
            Store::Q4 { scales, mins, qs } => {
                gather(scales, order, blocks);
                gather(mins, order, blocks);
                gather(qs, order, cols / 2);
            }
            Store::Q8 { scales, qs } => {
                gather(scales, order, blocks);
                gather(qs, order, cols);
            }
            Store::KQuant {
                row_bytes, data, ..
            } => gather(data, order, *row_bytes),
        }
    }

    /// Row `r`, dequantised into `out` (`cols` values).
    pub fn row_into(&self, r: usize, out: &mut [f32]) {
        let cols = self.cols;
        let blocks = r * cols / BLOCK..(r + 1) * cols / BLOCK;
        match &self.store {
            Store::F32(v) => out.copy_from_slice(&v[r * cols..(r + 1) * cols]),
            Store::Q4 { scales, mins, qs } => kernels::widen_q4(
                &scales[blocks.clone()],
                &mins[blocks],
                &qs[r * cols / 2..(r + 1) * cols / 2],
                out,
            ),
            Store::Q8 { scales, qs } => {
                kernels::widen_q8(&scales[blocks], &qs[r * cols..(r + 1) * cols], out)
            }
            Store::KQuant {
                kind,
                row_bytes,
                data,
            } => dequant::k_quant_into(*kind, &data[r * row_bytes..(r + 1) * row_bytes], out),
        }
    }

    /// Whether a row is multiplied in its blocks without being widened first (a K-quant row
    /// is widened, once for all the tokens).
    fn dots_in_place(&self) -> bool {
        !matches!(self.store, Store::KQuant { .. })
    }

    /// Row `r` · each token of `xs` into `out` (one value a token); `sums[t]` holds the sum
    /// of each 32-value block of `xs[t]` (only 4-bit rows use it, for their minimums). A
    /// 4- or 8-bit row's blocks are unpacked once for all the tokens; a K-quant row is
    /// widened once into `row` (`cols` long; other rows leave it alone).
    fn dot_row(&self, r: usize, xs: &[&[f32]], sums: &[&[f32]], row: &mut [f32], out: &mut [f32]) {
        let cols = self.cols;
        let blocks = r * cols / BLOCK..(r + 1) * cols / BLOCK;
        match &self.store {
            Store::F32(v) => {
                let row = &v[r * cols..(r + 1) * cols];
                for (o, x) in out.iter_mut().zip(xs) {
                    *o = kernels::dot_f32(row, x);
                }
            }
            Store::Q4 { scales, mins, qs } => kernels::dot_q4_tokens(
                &scales[blocks.clone()],
                &mins[blocks],
                &qs[r * cols / 2..(r + 1) * cols / 2],
                xs,
                sums,
                out,
            ),
            Store::Q8 { scales, qs } => {
                kernels::dot_q8_tokens(&scales[blocks], &qs[r * cols..(r + 1) * cols], xs, out)
            }
            Store::KQuant { .. } => {
                self.row_into(r, row);
                for (o, x) in out.iter_mut().zip(xs) {
                    *o = kernels::dot_f32(row, x);
                }
            }
        }
    }

    /// Rows `rows` of a 4- or 8-bit matrix packed for the integer products.
    fn pack_int8(&self, rows: std::ops::Range<usize>, into: &mut kernels::PackedRows) {
        let (cols, blocks) = (self.cols, self.cols / BLOCK);
        let (b, q) = (
            rows.start * blocks..rows.end * blocks,
            rows.start * cols..rows.end * cols,
        );
        match &self.store {
            Store::Q4 { scales, mins, qs } => into.pack_q4(
                &scales[b.clone()],
                &mins[b],
                &qs[q.start / 2..q.end / 2],
                cols,
            ),
            Store::Q8 { scales, qs } => into.pack_q8(&scales[b], &qs[q], cols),
            _ => *into = kernels::PackedRows::default(),
        }
    }

    /// Rows `first..first + n_part` of a 4- or 8-bit matrix times the quantised tokens
    /// into `part` (`t × n_part`, token-major), [`PRODUCT_ROWS`] rows packed at a time.
    fn multiply_int8(
        &self,
        first: usize,
        xs: &kernels::QuantisedTokens,
        part: &mut [f32],
        n_part: usize,
    ) {
        PACKED.with_borrow_mut(|packed| {
            for at in (0..n_part).step_by(PRODUCT_ROWS) {
                self.pack_int8(
                    first + at..first + at + PRODUCT_ROWS.min(n_part - at),
                    packed,
                );
                kernels::int8_product(packed, xs, &mut part[at..], n_part);
            }
        });
    }

    /// A 4- or 8-bit matrix times the quantised tokens, `t × rows`, each thread multiplying
    /// a run of tokens with all the rows into its own contiguous part of the result, which
    /// needs no gathering after. A matrix of at most [`PACKED_WHOLE_MAX`] values is packed
    /// once, in parallel, for all the threads; a larger one (an output layer over a large
    /// vocabulary) is packed by each thread, [`PRODUCT_ROWS`] rows at a time, for its tokens:
    /// packing it twice costs less than gathering a result of tokens × vocabulary values.
    fn apply_int8_by_tokens(&self, xs: &kernels::QuantisedTokens, out: &mut Vec<f32>) {
        let (rows, tokens) = (self.rows, xs.tokens());
        let starts: Vec<usize> = (0..rows).step_by(PRODUCT_ROWS).collect();
        let block = |at: usize| at..(at + PRODUCT_ROWS).min(rows);
        // Every value is written below: what `out` held is not zeroed first, and new memory
        // comes zeroed from the allocator (fresh pages) rather than written with zeros.
        if out.capacity() < rows * tokens {
            *out = vec![0.0; rows * tokens];
        }
        out.resize(rows * tokens, 0.0);
        let per = xs.tokens().div_ceil(rayon::current_num_threads()).max(1);
        // Thread `c`'s tokens times the rows packed in `p` from row `at`, into its part.
        let product = |c: usize, part: &mut [f32], at: usize, p: &kernels::PackedRows| {
            let tokens = c * per..c * per + part.len() / rows;
            kernels::int8_product_tokens(p, xs, tokens, &mut part[at..], rows);
        };
        if rows * self.cols > PACKED_WHOLE_MAX {
            out.par_chunks_mut(per * rows)
                .enumerate()
                .for_each(|(c, part)| {
                    PACKED.with_borrow_mut(|p| {
                        for &at in &starts {
                            self.pack_int8(block(at), p);
                            product(c, part, at, p);
                        }
                    });
                });
            return;
        }
        let mut kept = PACKED_WHOLE.with_borrow_mut(std::mem::take);
        if kept.len() < starts.len() {
            kept.resize_with(starts.len(), kernels::PackedRows::default);
        }
        let packed = &mut kept[..starts.len()];
        packed
            .par_iter_mut()
            .zip(&starts)
            .for_each(|(p, &at)| self.pack_int8(block(at), p));
        let packed = &*packed;
        out.par_chunks_mut(per * rows)
            .enumerate()
            .for_each(|(c, part)| {
                for (&at, p) in starts.iter().zip(packed) {
                    product(c, part, at, p);
                }
            });
        PACKED_WHOLE.with_borrow_mut(|pool| {
            if pool.len() < kept.len() {
                *pool = kept;
            }
        });
    }

    /// Whether a product with `tokens` tokens of `activations` runs as 8-bit integer
    /// products split by tokens ([`Self::apply_int8_by_tokens`]).
    fn int8_by_tokens(&self, tokens: usize, activations: Activations) -> bool {
        self.int8(activations) && tokens >= 2 * rayon::current_num_threads()
    }

    /// Whether products with `activations` run as 8-bit integer products: 4- and 8-bit rows
    /// times activations quantised to 8 bits, where the CPU has integer dot products (see
    /// `multiply_int8`), for any number of tokens (a token's value then does not depend on
    /// how many share its pass).
    pub(super) fn int8(&self, activations: Activations) -> bool {
        activations == Activations::Int8
            && matches!(self.store, Store::Q4 { .. } | Store::Q8 { .. })
            && kernels::int8_products_fast()
    }

    /// [`Self::apply_with`] into `out`, whose memory a caller keeps from one layer to the
    /// next: the 8-bit pass writes every value in place rather than into fresh zeroed
    /// memory; other products replace it.
    pub(super) fn apply_into(&self, xs: &[f32], activations: Activations, out: &mut Vec<f32>) {
        let tokens = xs.len() / self.cols.max(1);
        if self.int8_by_tokens(tokens, activations) {
            let quantised = quantise(&xs[..tokens * self.cols], self.cols);
            self.apply_int8_by_tokens(&quantised, out);
        } else {
            *out = self.apply_with(xs, activations);
        }
    }

    /// The matrix applied to each of the tokens in `xs` (`t × cols`): `t × rows`, token-major.
    /// Each row of weights is read once for all the tokens.
    pub fn apply(&self, xs: &[f32]) -> Vec<f32> {
        self.apply_with(xs, Activations::F32)
    }

    /// [`Self::apply`], with the activations treated as `activations` says.
    pub fn apply_with(&self, xs: &[f32], activations: Activations) -> Vec<f32> {
        let (rows, cols) = (self.rows, self.cols);
        let tokens = xs.len() / cols.max(1);
        let int8 = self.int8(activations);
        // Below a product's tokens, f32, 4- and 8-bit rows are dotted with the tokens in place
        // (quantised ones in their blocks); K-quant rows are widened once for all the tokens.
        let product = int8
            || if matches!(self.store, Store::Q4 { .. } | Store::Q8 { .. }) {
                tokens > BLOCK_DOTS_MAX_TOKENS
            } else {
                tokens >= PRODUCT_MIN_TOKENS
            };
        // Per-block sums of the tokens, for the dot products of 4-bit rows in their blocks.
        let sums: Vec<Vec<f32>> = if !product && matches!(self.store, Store::Q4 { .. }) {
            xs.chunks_exact(cols)
                .map(|x| x.chunks(BLOCK).map(|b| b.iter().sum()).collect())
                .collect()
        } else {
            Vec::new()
        };
        let quantised = if int8 {
            quantise(&xs[..tokens * cols], cols)
        } else {
            kernels::QuantisedTokens::default()
        };
        if self.int8_by_tokens(tokens, activations) {
            let mut out = Vec::new();
            self.apply_int8_by_tokens(&quantised, &mut out);
            return out;
        }
        // Each thread writes one contiguous chunk: the results of its rows for all the
        // tokens, token-major within the chunk (`t × n`), gathered into `t × rows` after.
        let mut chunked = vec![0.0f32; rows * tokens];
        let multiply = |first: usize, part: &mut [f32]| {
            let n_part = part.len() / tokens;
            if int8 {
                return self.multiply_int8(first, &quantised, part, n_part);
            }
            let xs = Mat::new(&xs[..tokens * cols], tokens, cols);
            // f32 rows are read in place; quantised ones are widened into this block.
            let mut block = match &self.store {
                Store::F32(_) => Vec::new(),
                _ => vec![0.0f32; PRODUCT_ROWS.min(n_part) * cols],
            };
            let mut few = vec![
                0.0f32;
                if tokens < TILES_ALONG_ROWS {
                    PRODUCT_ROWS.min(n_part) * tokens
                } else {
                    0
                }
            ];
            for b in 0..n_part.div_ceil(PRODUCT_ROWS) {
                let at = b * PRODUCT_ROWS;
                let (start, n) = (first + at, PRODUCT_ROWS.min(n_part - at));
                let weights: &[f32] = match &self.store {
                    Store::F32(v) => &v[start * cols..(start + n) * cols],
                    _ => {
                        for (i, row) in block.chunks_exact_mut(cols).take(n).enumerate() {
                            self.row_into(start + i, row);
                        }
                        &block[..n * cols]
                    }
                };
                let weights = Mat::new(weights, n, cols);
                if tokens >= TILES_ALONG_ROWS {
                    // Tokens × these rows, as columns `at..at + n` of the chunk: the
                    // product's register tiles (16 values by 6) then run along the weight
                    // rows, whole tiles, and only the last of a prompt's tokens fill a
                    // partial one.
                    let out = MatMut::strided(&mut part[at..], tokens, n, n_part);
                    kernels::matmul(out, xs, weights.t(), 1.0, false, 1);
                } else {
                    // Few tokens (a decoding batch of 6 to 15) fill the 16-value side of a tile
                    // better: rows × tokens, moved into place after.
                    let out = MatMut::new(&mut few[..n * tokens], n, tokens);
                    kernels::matmul(out, weights, xs.t(), 1.0, false, 1);
                    for (r, values) in few.chunks_exact(tokens).take(n).enumerate() {
                        for (t, v) in values.iter().enumerate() {
                            part[t * n_part + at + r] = *v;
                        }
                    }
                }
            }
        };
        let fill = |first: usize, part: &mut [f32]| {
            if product {
                return multiply(first, part);
            }
            let n_part = part.len() / tokens;
            let token_xs: Vec<&[f32]> = xs.chunks_exact(cols).collect();
            let token_sums: Vec<&[f32]> = sums.iter().map(Vec::as_slice).collect();
            let mut row = vec![0.0f32; if self.dots_in_place() { 0 } else { cols }];
            let mut values = vec![0.0f32; tokens];
            for i in 0..n_part {
                self.dot_row(first + i, &token_xs, &token_sums, &mut row, &mut values);
                for (t, v) in values.iter().enumerate() {
                    part[t * n_part + i] = *v;
                }
            }
        };
        // Rows a chunk.
        let per = if rows * cols < PARALLEL_MIN {
            fill(0, &mut chunked);
            rows
        } else {
            // A product repacks the tokens for each chunk, so it takes fewer, larger ones;
            // dot products take several chunks a thread, so that a core slowed by other work
            // does not hold up the rest.
            let chunks = if product { 2 } else { 4 };
            let per = rows.div_ceil(rayon::current_num_threads() * chunks).max(1);
            chunked
                .par_chunks_mut(per * tokens)
                .enumerate()
                .for_each(|(c, part)| fill(c * per, part));
            per
        };
        if tokens == 1 || per == rows {
            return chunked;
        }
        let mut out = vec![0.0f32; rows * tokens];
        let token = |(t, out): (usize, &mut [f32])| {
            for (c, part) in chunked.chunks(per * tokens).enumerate() {
                let n = part.len() / tokens;
                out[c * per..c * per + n].copy_from_slice(&part[t * n..(t + 1) * n]);
            }
        };
        if rows * tokens < PARALLEL_MIN {
            out.chunks_exact_mut(rows).enumerate().for_each(token);
        } else {
            out.par_chunks_exact_mut(rows).enumerate().for_each(token);
        }
        out
    }
}

/// Projections of the same input (a layer's Q, K and V; its gate and up), multiplied as
/// one matrix where their weights are stored alike: each weight row is still read once a
/// pass, the tokens are packed once instead of once a projection, and a step runs one
/// parallel section instead of three.
pub(super) struct Stacked<const N: usize> {
    /// One matrix when stacked, else one a projection.
    parts: Vec<Matrix>,
    /// Rows of each projection.
    widths: [usize; N],
}

impl<const N: usize> Stacked<N> {
    /// `parts`, stacked where they can be.
    pub(super) fn new(parts: [Matrix; N]) -> Stacked<N> {
        let widths = parts.each_ref().map(Matrix::rows);
        let parts = match Matrix::stack(parts.into()) {
            Ok(m) => vec![m],
            Err(parts) => parts,
        };
        Stacked { parts, widths }
    }

    /// Bytes the weights hold in memory.
    pub(super) fn bytes(&self) -> usize {
        self.parts.iter().map(Matrix::bytes).sum()
    }

    /// Whether every projection runs as 8-bit integer products ([`Matrix::int8`]).
    pub(super) fn int8(&self, activations: Activations) -> bool {
        self.parts.iter().all(|m| m.int8(activations))
    }

    /// Each token's projections side by side (`t × Σ rows`) into `out` (see
    /// [`Matrix::apply_into`]), where they are stacked as one matrix; false, leaving `out`
    /// alone, where they are not.
    pub(super) fn apply_side_by_side_into(
        &self,
        xs: &[f32],
        activations: Activations,
        out: &mut Vec<f32>,
    ) -> bool {
        match self.parts.as_slice() {
            [stacked] => {
                stacked.apply_into(xs, activations, out);
                true
            }
            _ => false,
        }
    }

    /// Each projection applied to the tokens in `xs`: one `t × rows` result a projection,
    /// token-major, as [`Matrix::apply`] gives it.
    pub(super) fn apply(&self, xs: &[f32], activations: Activations) -> [Vec<f32>; N] {
        let [stacked] = self.parts.as_slice() else {
            return std::array::from_fn(|i| self.parts[i].apply_with(xs, activations));
        };
        let all = stacked.apply_with(xs, activations);
        let total = stacked.rows.max(1);
        let tokens = all.len() / total;
        let mut out: [Vec<f32>; N] = self.widths.map(|w| Vec::with_capacity(w * tokens));
        for row in all.chunks_exact(total) {
            let mut at = 0;
            for (o, w) in out.iter_mut().zip(&self.widths) {
                o.extend_from_slice(&row[at..at + w]);
                at += w;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One Q4_1 block (scale 0.5, minimum −1) and one Q8_0 block, as ggml stores them.
    #[test]
    fn a_prefill_of_many_tokens_gives_each_token_what_it_gets_alone() {
        // 300 rows (more than one widened block) of 64 4-bit values, and 1,100 rows (split
        // over threads in chunks): two tokens (dot products in the blocks), four (rows
        // widened once) and eleven (the tiled product).
        for rows in [300, 1100] {
            let cols = 64;
            let data: Vec<u8> = (0..rows * 2)
                .flat_map(|b| q4_1_block(&std::array::from_fn(|i| ((i * 5 + b * 3) % 16) as u8)))
                .collect();
            let m = Matrix::from_ggml(kind::Q4_1, &data, rows, cols).unwrap();
            for tokens in [2, 4, 11] {
                let xs: Vec<f32> = (0..tokens * cols)
                    .map(|i| (i as f32 * 0.13).cos())
                    .collect();
                let all = m.apply(&xs);
                assert_eq!(all.len(), tokens * rows);
                for (t, x) in xs.chunks_exact(cols).enumerate() {
                    let alone = m.apply(x);
                    for (r, (a, b)) in all[t * rows..(t + 1) * rows].iter().zip(&alone).enumerate()
                    {
                        assert!(
                            (a - b).abs() < 1e-4 * (1.0 + b.abs()),
                            "{rows} rows, {tokens} tokens: token {t} row {r}: {a} vs {b}"
                        );
                    }
                }
            }
        }
    }

    /// With 8-bit activations, 4- and 8-bit rows are multiplied with the tokens quantised a
    /// 32-value block (where the CPU has integer dot products): each result stays within what
    /// rounding the activations can move it, `Σ_b (max |x_b| / 254) · Σ |w_b|`, of the f32
    /// dot product a single token gets.
    #[test]
    fn products_of_many_tokens_stay_within_the_activations_rounding() {
        let (rows, cols, tokens) = (700, 96, 20);
        let q4: Vec<u8> = (0..rows * cols / 32)
            .flat_map(|b| q4_1_block(&std::array::from_fn(|i| ((i * 5 + b * 3) % 16) as u8)))
            .collect();
        let q8: Vec<u8> = (0..rows * cols / 32)
            .flat_map(|b| {
                let mut block = half::f16::from_f32(0.01 * (b % 7) as f32 + 0.02)
                    .to_le_bytes()
                    .to_vec();
                block.extend((0..32).map(|i| ((i * 37 + b * 11) % 255) as u8));
                block
            })
            .collect();
        let xs: Vec<f32> = (0..tokens * cols)
            .map(|i| (i as f32 * 0.31).sin() * (1.0 + (i % 17) as f32))
            .collect();
        for (kind, data) in [(kind::Q4_1, q4), (kind::Q8_0, q8)] {
            let m = Matrix::from_ggml(kind, &data, rows, cols).unwrap();
            let all = m.apply_with(&xs, Activations::Int8);
            let mut row = vec![0.0; cols];
            for (t, x) in xs.chunks_exact(cols).enumerate() {
                let alone = m.apply(x);
                for r in 0..rows {
                    m.row_into(r, &mut row);
                    let bound: f32 = x
                        .chunks(32)
                        .zip(row.chunks(32))
                        .map(|(xb, wb)| {
                            let step = xb.iter().fold(0.0f32, |a, v| a.max(v.abs())) / 127.0;
                            step / 2.0 * wb.iter().map(|w| w.abs()).sum::<f32>()
                        })
                        .sum();
                    let (a, b) = (all[t * rows + r], alone[r]);
                    assert!(
                        (a - b).abs() <= bound * 1.001 + 1e-4 * (1.0 + b.abs()),
                        "{kind}: token {t} row {r}: {a} vs {b} (bound {bound})"
                    );
                }
            }
        }
    }

    #[test]
    fn stacked_projections_give_what_each_gives_alone() {
        let q4 = |rows: usize, seed: usize| {
            let data: Vec<u8> = (0..rows * 2)
                .flat_map(|b| {
                    q4_1_block(&std::array::from_fn(|i| {
                        ((i * 3 + b * 7 + seed) % 16) as u8
                    }))
                })
                .collect();
            Matrix::from_ggml(kind::Q4_1, &data, rows, 64).unwrap()
        };
        let f32s = |rows: usize| {
            Matrix::f32(rows, 64, (0..rows * 64).map(|i| (i as f32).sin()).collect()).unwrap()
        };
        // Three 4-bit projections (one split across threads) stack into one matrix; a 4-bit
        // and an f32 one stay apart.
        let alike = || [q4(1100, 1), q4(40, 2), q4(40, 3)];
        let mixed = || [q4(300, 4), f32s(20)];
        fn check<const N: usize>(parts: [Matrix; N], rebuilt: [Matrix; N], matrices: usize) {
            let stacked = Stacked::new(rebuilt);
            assert_eq!(stacked.parts.len(), matrices);
            let bytes: usize = parts.iter().map(Matrix::bytes).sum();
            assert_eq!(stacked.bytes(), bytes);
            let runs = [1, 20].map(|t| [Activations::F32, Activations::Int8].map(|a| (t, a)));
            for (tokens, activations) in runs.into_iter().flatten() {
                let xs: Vec<f32> = (0..tokens * 64).map(|i| (i as f32 * 0.07).cos()).collect();
                let got = stacked.apply(&xs, activations);
                for (got, m) in got.iter().zip(&parts) {
                    let want = m.apply_with(&xs, activations);
                    assert_eq!(got.len(), want.len());
                    for (a, b) in got.iter().zip(&want) {
                        assert!((a - b).abs() < 1e-4 * (1.0 + b.abs()), "{a} vs {b}");
                    }
                }
            }
        }
        check(alike(), alike(), 1);
        check(mixed(), mixed(), 2);
        assert!(Matrix::stack(Vec::new()).is_err());
    }

    fn q4_1_block(nibbles: &[u8; 32]) -> Vec<u8> {
        let mut b = half::f16::from_f32(0.5).to_le_bytes().to_vec();
        b.extend(half::f16::from_f32(-1.0).to_le_bytes());
        b.extend((0..16).map(|j| nibbles[j] | (nibbles[j + 16] << 4)));
        b
    }

    #[test]
    fn quantised_products_equal_the_dequantised_ones() {
        let nibbles: [u8; 32] = std::array::from_fn(|i| (i * 7 % 16) as u8);
        let mut q4 = q4_1_block(&nibbles);
        q4.extend(q4_1_block(&std::array::from_fn(|i| (15 - i % 16) as u8)));
        let mut q8 = half::f16::from_f32(0.25).to_le_bytes().to_vec();
        q8.extend((0..32).map(|i| (i as i8 - 16) as u8));
        let x: Vec<f32> = (0..64).map(|i| (i as f32 * 0.37).sin()).collect();
        for (kind, data, rows) in [(kind::Q4_1, q4, 1), (kind::Q8_0, q8, 1)] {
            let cols = if kind == kind::Q8_0 { 32 } else { 64 };
            let m = Matrix::from_ggml(kind, &data, rows, cols).unwrap();
            let dense = dequant::to_f32(kind, &data, rows * cols).unwrap();
            let mut row = vec![0.0; cols];
            m.row_into(0, &mut row);
            assert_eq!(row, dense);
            let want: f32 = dense.iter().zip(&x).map(|(a, b)| a * b).sum();
            let got = m.apply(&x[..cols])[0];
            assert!((got - want).abs() < 1e-4, "{kind}: {got} vs {want}");
        }
        // Q4_1 element 1 is nibble 7: 7 × 0.5 − 1.
        let m = Matrix::from_ggml(kind::Q4_1, &q4_1_block(&nibbles), 1, 32).unwrap();
        let mut row = vec![0.0; 32];
        m.row_into(0, &mut row);
        assert_eq!(row[1], 2.5);
    }

    /// llama.cpp's K-quant blocks (`data/gguf/kquants.json`, two super-blocks a type) as a
    /// 2 × 256 matrix: kept in their blocks (Q4_K as 4-bit blocks, a third larger; Q5_K and
    /// Q6_K as stored), rows and products as the dequantised matrix gives them, for one token
    /// (a dot product a row), four (rows widened once) and eleven (the tiled product).
    #[test]
    fn k_quant_rows_stay_in_their_blocks_and_multiply_as_dequantised() {
        let text = include_str!("../../../data/gguf/kquants.json");
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let (rows, cols) = (2, 256);
        for case in v["cases"].as_array().unwrap() {
            let kind = u32::try_from(case["ggml_type"].as_u64().unwrap()).unwrap();
            let data = hex::decode(case["blocks_hex"].as_str().unwrap()).unwrap();
            let dense = dequant::to_f32(kind, &data, rows * cols).unwrap();
            let mut m = Matrix::from_ggml(kind, &data, rows, cols).unwrap();
            assert!(
                m.bytes() * 3 <= data.len() * 4,
                "{kind}: {} bytes",
                m.bytes()
            );
            let close = |a: f32, b: f32| (a - b).abs() <= 1e-5 * (1.0 + b.abs());
            let mut row = vec![0.0; cols];
            for r in 0..rows {
                m.row_into(r, &mut row);
                let want = &dense[r * cols..(r + 1) * cols];
                assert!(
                    row.iter().zip(want).all(|(a, b)| close(*a, *b)),
                    "{kind} row {r}"
                );
            }
            for tokens in [1, 4, 11] {
                let xs: Vec<f32> = (0..tokens * cols)
                    .map(|i| (i as f32 * 0.11).sin())
                    .collect();
                let got = m.apply(&xs);
                for (t, x) in xs.chunks_exact(cols).enumerate() {
                    for r in 0..rows {
                        let w = &dense[r * cols..(r + 1) * cols];
                        let want: f32 = w.iter().zip(x).map(|(a, b)| a * b).sum();
                        let got = got[t * rows + r];
                        assert!(
                            (got - want).abs() < 1e-3 * (1.0 + want.abs()),
                            "{kind}, {tokens} tokens: {got} vs {want}"
                        );
                    }
                }
            }
            m.reorder_rows(&[1, 0]);
            m.row_into(0, &mut row);
            assert!(row.iter().zip(&dense[cols..]).all(|(a, b)| close(*a, *b)));
        }
    }

    #[test]
    fn products_of_several_tokens_come_back_token_major_and_rows_reorder() {
        let w: Vec<f32> = (0..6).map(|v| v as f32).collect(); // [[0 1 2] [3 4 5]]
        let mut m = Matrix::f32(2, 3, w).unwrap();
        let xs = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0];
        assert_eq!(m.apply(&xs), vec![0.0, 3.0, 2.0, 5.0]);
        m.reorder_rows(&[1, 0]);
        assert_eq!(m.apply(&xs[..3]), vec![3.0, 0.0]);
        assert!(Matrix::f32(2, 2, vec![0.0; 3]).is_err());
        assert!(Matrix::from_ggml(kind::Q8_0, &[0u8; 33], 1, 32).is_err());
    }
}
