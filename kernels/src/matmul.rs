//! Products of f32 matrices for batched work (the embedder's layers, a prompt's prefill):
//! `gemm`'s kernels, tiled for the caches and vectorised for the widest instructions the CPU
//! has (AVX-512, AVX2+FMA or SSE, picked at run time), split over rayon's threads.

/// A matrix view: `rows × cols` values, value `(r, c)` at `r × row_stride + c × col_stride`.
#[derive(Clone, Copy, Debug)]
pub struct Mat<'a> {
    data: &'a [f32],
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: usize,
}

/// The last index a `rows × cols` view with these strides reads, plus one (`usize::MAX`
/// when that overflows, which no slice can hold).
fn extent(rows: usize, cols: usize, row_stride: usize, col_stride: usize) -> usize {
    if rows == 0 || cols == 0 {
        return 0;
    }
    (rows - 1)
        .checked_mul(row_stride)
        .and_then(|r| r.checked_add((cols - 1).checked_mul(col_stride)?))
        .and_then(|e| e.checked_add(1))
        .unwrap_or(usize::MAX)
}

impl<'a> Mat<'a> {
    /// A contiguous row-major `rows × cols` matrix. Panics when `data` has another length.
    pub fn new(data: &'a [f32], rows: usize, cols: usize) -> Mat<'a> {
        assert_eq!(
            data.len(),
            rows * cols,
            "matrix data differs from its shape"
        );
        Mat::strided(data, rows, cols, cols)
    }

    /// `rows × cols` values whose rows start `row_stride` apart (a column block of a wider
    /// row-major matrix). Panics when `data` is too short.
    pub fn strided(data: &'a [f32], rows: usize, cols: usize, row_stride: usize) -> Mat<'a> {
        assert!(
            data.len() >= extent(rows, cols, row_stride, 1),
            "matrix data shorter than its shape"
        );
        Mat {
            data,
            rows,
            cols,
            row_stride,
            col_stride: 1,
        }
    }

    /// The transpose, reading the same values.
    pub fn t(self) -> Mat<'a> {
        Mat {
            data: self.data,
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
        }
    }
}

/// A row-major output matrix: `rows × cols` values, rows starting `stride` apart.
#[derive(Debug)]
pub struct MatMut<'a> {
    data: &'a mut [f32],
    rows: usize,
    cols: usize,
    stride: usize,
}

impl<'a> MatMut<'a> {
    /// A contiguous `rows × cols` output. Panics when `data` has another length.
    pub fn new(data: &'a mut [f32], rows: usize, cols: usize) -> MatMut<'a> {
        assert_eq!(
            data.len(),
            rows * cols,
            "matrix data differs from its shape"
        );
        MatMut::strided(data, rows, cols, cols)
    }

    /// `rows × cols` outputs whose rows start `stride` apart; values between them are left
    /// as they are. Panics when `data` is too short or rows would overlap.
    pub fn strided(data: &'a mut [f32], rows: usize, cols: usize, stride: usize) -> MatMut<'a> {
        // Threads write rows at once: they must not share a value.
        assert!(rows <= 1 || stride >= cols, "output rows overlap");
        assert!(
            data.len() >= extent(rows, cols, stride, 1),
            "matrix data shorter than its shape"
        );
        MatMut {
            data,
            rows,
            cols,
            stride,
        }
    }
}

/// `c ← c + scale · a · b` (`accumulate`) or `c ← scale · a · b`. `threads` > 1 splits the
/// product over rayon's pool.
///
/// Panics when the shapes do not fit.
pub fn matmul(c: MatMut<'_>, a: Mat<'_>, b: Mat<'_>, scale: f32, accumulate: bool, threads: usize) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    assert_eq!(b.rows, k, "inner dimensions differ");
    assert!(
        c.rows == m && c.cols == n,
        "output shape differs from the product's"
    );
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            for row in c.data.chunks_mut(c.stride).take(m) {
                row[..n].fill(0.0);
            }
        }
        return;
    }
    let parallelism = if threads > 1 {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    // A stride is only followed within a slice (checked by `extent`), so it fits `isize`
    // whenever it is used; a view of one row or column may carry any.
    let stride = |s: usize| isize::try_from(s).unwrap_or(isize::MAX);
    // SAFETY: `Mat::strided`/`MatMut::strided` checked that every index of their views lies
    // inside their slices, and the asserts above that the three shapes agree, so gemm reads
    // `a` and `b` and writes `c` only inside them; `c` is borrowed mutably, so it overlaps
    // neither input.
    #[allow(unsafe_code)]
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.data.as_mut_ptr(),
            1,
            stride(c.stride),
            accumulate,
            a.data.as_ptr(),
            stride(a.col_stride),
            stride(a.row_stride),
            b.data.as_ptr(),
            stride(b.col_stride),
            stride(b.row_stride),
            1.0,
            scale,
            false,
            false,
            false,
            parallelism,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
        let mut c = vec![0.0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            }
        }
        c
    }

    fn values(n: usize, seed: u32) -> Vec<f32> {
        (0..n)
            .map(|i| {
                ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) % 1000) as f32 / 500.0
                    - 1.0
            })
            .collect()
    }

    #[test]
    fn products_equal_the_plain_sums_on_one_thread_and_two() {
        for (m, k, n) in [(1, 1, 1), (3, 5, 7), (37, 64, 96), (130, 384, 40)] {
            let (a, b) = (values(m * k, 1), values(k * n, 2));
            let want = plain(&a, &b, m, k, n);
            for threads in [1, 2] {
                let mut c = vec![f32::NAN; m * n];
                matmul(
                    MatMut::new(&mut c, m, n),
                    Mat::new(&a, m, k),
                    Mat::new(&b, k, n),
                    1.0,
                    false,
                    threads,
                );
                for (x, y) in c.iter().zip(&want) {
                    assert!(
                        (x - y).abs() <= 1e-4 * (1.0 + y.abs()),
                        "{m}x{k}x{n}: {x} vs {y}"
                    );
                }
            }
        }
    }

    #[test]
    fn accumulating_adds_to_what_the_output_held_and_strided_inputs_read_their_block() {
        let (m, k, n) = (4, 6, 3);
        // `a` is the middle 6 columns of a 4 × 10 matrix.
        let wide = values(m * 10, 3);
        let a: Vec<f32> = (0..m)
            .flat_map(|i| wide[i * 10 + 2..i * 10 + 8].to_vec())
            .collect();
        let b = values(k * n, 4);
        let mut c = vec![1.5f32; m * n];
        matmul(
            MatMut::new(&mut c, m, n),
            Mat::strided(&wide[2..], m, k, 10),
            Mat::new(&b, k, n),
            1.0,
            true,
            1,
        );
        for (x, y) in c.iter().zip(plain(&a, &b, m, k, n)) {
            assert!((x - (y + 1.5)).abs() < 1e-5);
        }
    }

    #[test]
    fn transposed_inputs_scaled_products_and_strided_outputs() {
        let (m, k, n) = (5, 4, 3);
        let a = values(m * k, 5);
        // `bt` holds bᵀ (n × k); the product reads it transposed.
        let bt = values(n * k, 6);
        let b: Vec<f32> = (0..k)
            .flat_map(|p| (0..n).map(|j| bt[j * k + p]).collect::<Vec<_>>())
            .collect();
        // The output is columns 1..4 of a 5 × 6 matrix; the other columns stay 9.
        let mut wide = vec![9.0f32; m * 6];
        matmul(
            MatMut::strided(&mut wide[1..], m, n, 6),
            Mat::new(&a, m, k),
            Mat::new(&bt, n, k).t(),
            0.5,
            false,
            1,
        );
        let want = plain(&a, &b, m, k, n);
        for i in 0..m {
            for j in 0..6 {
                let got = wide[i * 6 + j];
                if (1..4).contains(&j) {
                    assert!((got - 0.5 * want[i * n + j - 1]).abs() < 1e-5);
                } else {
                    assert_eq!(got, 9.0);
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "inner dimensions differ")]
    fn mismatched_shapes_are_refused() {
        let mut c = vec![0.0; 4];
        matmul(
            MatMut::new(&mut c, 2, 2),
            Mat::new(&[0.0; 6], 2, 3),
            Mat::new(&[0.0; 4], 2, 2),
            1.0,
            false,
            1,
        );
    }
}
