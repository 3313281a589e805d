use super::*;

fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (((i * 37 + seed * 11) % 101) as f32 - 50.0) / 17.0)
        .collect()
}

/// 4-bit rows: scales, minimums and packed nibbles, value `k` of each block at nibble
/// `(k × 7 + row + block) mod 16`.
fn q4_rows(rows: usize, cols: usize) -> (Vec<f32>, Vec<f32>, Vec<u8>) {
    let blocks = cols / BLOCK;
    let nibble = |r: usize, b: usize, k: usize| ((k * 7 + r + b) % 16) as u8;
    let mut qs = Vec::new();
    for r in 0..rows {
        for b in 0..blocks {
            qs.extend((0..16).map(|k| nibble(r, b, k) | (nibble(r, b, k + 16) << 4)));
        }
    }
    let scales = values(rows * blocks, 1).iter().map(|v| v / 40.0).collect();
    let mins = values(rows * blocks, 2).iter().map(|v| v / 9.0).collect();
    (scales, mins, qs)
}

fn q4_value(s: &[f32], m: &[f32], qs: &[u8], cols: usize, r: usize, k: usize) -> f32 {
    let blocks = cols / BLOCK;
    let (b, j) = (r * blocks + k / BLOCK, k % BLOCK);
    let byte = qs[b * 16 + j % 16];
    let q = if j < 16 { byte & 15 } else { byte >> 4 };
    f32::from(q) * s[b] + m[b]
}

/// The scale of value `i` of the tokens, counted token by token.
fn scale_of(x: &QuantisedTokens, i: usize) -> f32 {
    let (t, b) = (i / x.cols, i % x.cols / BLOCK);
    x.scales[b * x.tokens + t]
}

/// The tokens' values as quantised, token by token.
fn dequantised_tokens(x: &QuantisedTokens) -> Vec<f32> {
    (0..x.tokens * x.cols)
        .map(|i| {
            let (t, k) = (i / x.cols, i % x.cols);
            let at = (k / BLOCK * x.tokens + t) * BLOCK + k % BLOCK;
            f32::from(x.qs[at]) * scale_of(x, i)
        })
        .collect()
}

#[test]
fn quantised_tokens_stay_within_half_a_step() {
    let xs = values(3 * 96, 5);
    let x = QuantisedTokens::new(&xs, 96);
    assert_eq!((x.tokens(), x.cols()), (3, 96));
    for (i, (a, b)) in xs.iter().zip(dequantised_tokens(&x)).enumerate() {
        assert!((a - b).abs() <= scale_of(&x, i) * 0.5001, "{i}: {a} vs {b}");
    }
    // A block of zeros has scale 0 and quantises to zeros.
    let zero = QuantisedTokens::new(&[0.0; 32], 32);
    assert_eq!((zero.scales[0], zero.qs[5], zero.sums[0]), (0.0, 0, 0.0));
    // Scale 1: halves round to even; NaN is left out of the maximum and becomes 0; both
    // builds agree on every field.
    let mut odd = [0.0f32; 32];
    odd[..6].copy_from_slice(&[127.0, 2.5, 3.5, -2.5, f32::NAN, -126.6]);
    for baseline in [true, false] {
        crate::force_baseline(baseline);
        let x = QuantisedTokens::new(&odd, 32);
        crate::force_baseline(false);
        assert_eq!(x.scales, [1.0]);
        assert_eq!(x.qs[..6], [127, 2, 4, -2, 0, -127], "baseline {baseline}");
        assert_eq!((x.sums[0], x.offsets[0]), (4.0, 512));
    }
}

#[test]
fn products_are_those_of_the_dequantised_values() {
    let (rows, cols, tokens) = (21, 96, 11);
    let (s, m, qs) = q4_rows(rows, cols);
    let xs = values(tokens * cols, 3);
    let x = QuantisedTokens::new(&xs, cols);
    let xd = dequantised_tokens(&x);
    let mut w = PackedRows::default();
    w.pack_q4(&s, &m, &qs, cols);
    assert_eq!(w.rows(), rows);
    let stride = rows + 3;
    let mut out = vec![f32::NAN; tokens * stride];
    product(&w, &x, &mut out, stride);
    for t in 0..tokens {
        for r in 0..rows {
            let want: f64 = (0..cols)
                .map(|k| f64::from(q4_value(&s, &m, &qs, cols, r, k) * xd[t * cols + k]))
                .sum();
            let got = out[t * stride + r];
            assert!(
                (f64::from(got) - want).abs() < 1e-3 * want.abs().max(1.0),
                "{t} {r}"
            );
        }
        // The gap between a token's rows is left alone.
        assert!(out[t * stride + rows].is_nan());
    }

    let q8: Vec<i8> = (0..rows * cols)
        .map(|i| (i * 53 % 255) as u8 as i8)
        .collect();
    let s8: Vec<f32> = values(rows * cols / BLOCK, 4)
        .iter()
        .map(|v| v / 50.0)
        .collect();
    w.pack_q8(&s8, &q8, cols);
    product(&w, &x, &mut out, stride);
    for t in 0..tokens {
        for r in 0..rows {
            let want: f64 = (0..cols)
                .map(|k| {
                    let wv = f32::from(q8[r * cols + k]) * s8[(r * cols + k) / BLOCK];
                    f64::from(wv * xd[t * cols + k])
                })
                .sum();
            let got = out[t * stride + r];
            assert!(
                (f64::from(got) - want).abs() < 1e-3 * want.abs().max(1.0),
                "{t} {r}"
            );
        }
    }
}

#[test]
fn every_build_gives_the_same_bits() {
    let (rows, cols, tokens) = (40, 576, 19);
    let (s, m, qs) = q4_rows(rows, cols);
    let x = QuantisedTokens::new(&values(tokens * cols, 9), cols);
    let q8: Vec<i8> = (0..rows * cols)
        .map(|i| (i * 29 % 256) as u8 as i8)
        .collect();
    let s8: Vec<f32> = values(rows * cols / BLOCK, 6);
    for eight_bit in [false, true] {
        let mut w = PackedRows::default();
        if eight_bit {
            w.pack_q8(&s8, &q8, cols);
        } else {
            w.pack_q4(&s, &m, &qs, cols);
        }
        let (mut fast, mut plain) = (vec![0.0; tokens * rows], vec![0.0; tokens * rows]);
        product(&w, &x, &mut fast, rows);
        product_plain(&w, &x, 0..tokens, &mut plain, rows);
        assert_eq!(fast, plain, "8-bit rows: {eight_bit}");
        // The plain packing (as for a partial group) gives the same bytes.
        let mut baseline = PackedRows::default();
        crate::force_baseline(true);
        if eight_bit {
            baseline.pack_q8(&s8, &q8, cols);
        } else {
            baseline.pack_q4(&s, &m, &qs, cols);
        }
        let xb = QuantisedTokens::new(&values(tokens * cols, 9), cols);
        crate::force_baseline(false);
        assert_eq!(baseline.bytes, w.bytes);
        assert_eq!((&baseline.scales, &baseline.mins), (&w.scales, &w.mins));
        assert_eq!((xb.qs, xb.scales), (x.qs.clone(), x.scales.clone()));
    }
}

#[test]
fn a_range_of_tokens_gets_what_the_whole_product_gives_it() {
    let (rows, cols, tokens) = (24, 64, 13);
    let (s, m, qs) = q4_rows(rows, cols);
    let x = QuantisedTokens::new(&values(tokens * cols, 2), cols);
    let mut w = PackedRows::default();
    w.pack_q4(&s, &m, &qs, cols);
    let mut all = vec![0.0; tokens * rows];
    product(&w, &x, &mut all, rows);
    let mut part = vec![0.0; 5 * rows];
    product_tokens(&w, &x, 7..12, &mut part, rows);
    assert_eq!(part, all[7 * rows..12 * rows]);
    let mut plain = vec![0.0; 5 * rows];
    product_plain(&w, &x, 7..12, &mut plain, rows);
    assert_eq!(plain, part);
    // A range past the tokens writes nothing.
    let mut past = vec![7.0; 5 * rows];
    product_tokens(&w, &x, 10..15, &mut past, rows);
    assert!(past.iter().all(|v| *v == 7.0));
}

#[test]
fn rows_packed_over_an_earlier_packing_multiply_as_freshly_packed_ones() {
    // The buffer first holds 40 rows of 96 values (8-bit), then 13 rows of 64 (4-bit): a
    // last group of five rows over what the first packing left.
    let x = QuantisedTokens::new(&values(9 * 64, 4), 64);
    let qs8: Vec<i8> = (0..40 * 96).map(|i| ((i * 53) % 255) as i8).collect();
    let mut reused = PackedRows::default();
    reused.pack_q8(&values(40 * 3, 6), &qs8, 96);
    let (s, m, qs) = q4_rows(13, 64);
    reused.pack_q4(&s, &m, &qs, 64);
    let mut fresh = PackedRows::default();
    fresh.pack_q4(&s, &m, &qs, 64);
    let (mut a, mut b) = (vec![0.0; 9 * 13], vec![1.0; 9 * 13]);
    product(&reused, &x, &mut a, 13);
    product(&fresh, &x, &mut b, 13);
    assert_eq!(a, b);
}

#[test]
fn tokens_quantised_in_parts_and_joined_are_those_quantised_at_once() {
    let xs = values(11 * 96, 8);
    let whole = QuantisedTokens::new(&xs, 96);
    let parts: Vec<QuantisedTokens> = xs
        .chunks(4 * 96)
        .map(|p| QuantisedTokens::new(p, 96))
        .collect();
    let joined = QuantisedTokens::join(&parts);
    assert_eq!(joined.tokens(), 11);
    assert_eq!(
        (&joined.qs, &joined.scales, &joined.sums, &joined.offsets),
        (&whole.qs, &whole.scales, &whole.sums, &whole.offsets)
    );
    assert_eq!(QuantisedTokens::join(&[]).tokens(), 0);
}

#[test]
fn mismatched_shapes_write_nothing() {
    let (s, m, qs) = q4_rows(8, 64);
    let mut w = PackedRows::default();
    w.pack_q4(&s, &m, &qs, 64);
    let x = QuantisedTokens::new(&values(2 * 96, 1), 96);
    let mut out = vec![7.0; 16];
    product(&w, &x, &mut out, 8);
    assert!(out.iter().all(|v| *v == 7.0));
    let x = QuantisedTokens::new(&values(3 * 64, 1), 64);
    let mut short = vec![7.0; 2 * 8];
    product(&w, &x, &mut short, 8);
    assert!(short.iter().all(|v| *v == 7.0));
}

/// AVX2's byte multiply-adds (for CPUs without VNNI) give the plain loops' bits, at the
/// largest values their 16-bit sums must hold too: 4-bit weights of 15 and 8-bit ones of
/// −128 and 127 against activations of ±127, for every tile size and a partial last group.
#[cfg(target_arch = "x86_64")]
#[test]
fn byte_multiply_adds_give_the_plain_bits_at_the_extremes() {
    if !crate::wide() {
        return;
    }
    let (rows, cols) = (13, 96);
    let blocks = cols / BLOCK;
    // Tokens of ±127 after quantising (each block's largest value sets its scale), one of
    // them all of one sign, the rest from `values`.
    let mut xs = values(9 * cols, 7);
    xs[..cols].fill(3.0);
    for (i, v) in xs[cols..2 * cols].iter_mut().enumerate() {
        *v = if i % 3 == 0 { -2.0 } else { 2.0 };
    }
    let x = QuantisedTokens::new(&xs, cols);
    assert!(x.qs.iter().filter(|q| q.abs() == 127).count() > 2 * cols);
    let extremes: Vec<i8> = (0..rows * cols)
        .map(|i| match i % 5 {
            0 | 3 => i8::MIN,
            1 => i8::MAX,
            2 => -1,
            _ => (i % 251) as i8,
        })
        .collect();
    let scales: Vec<f32> = values(rows * blocks, 3).iter().map(|v| v / 30.0).collect();
    let mins: Vec<f32> = values(rows * blocks, 4).iter().map(|v| v / 7.0).collect();
    let fifteens = vec![0xffu8; rows * cols / 2];
    let (_, _, mixed) = q4_rows(rows, cols);
    for w in [
        {
            let mut w = PackedRows::default();
            w.pack_q8(&scales, &extremes, cols);
            w
        },
        {
            let mut w = PackedRows::default();
            w.pack_q4(&scales, &mins, &fifteens, cols);
            w
        },
        {
            let mut w = PackedRows::default();
            w.pack_q4(&scales, &mins, &mixed, cols);
            w
        },
    ] {
        for tokens in [0..1, 0..2, 1..4, 0..4, 2..7, 0..9] {
            let what = format!("8-bit rows {}, tokens {tokens:?}", w.eight_bit);
            assert_madd_gives_plain_bits(&w, &x, tokens, &what);
        }
    }
}

/// AVX2's byte multiply-adds over `tokens` of `x` give the plain loops' bits for `w`.
#[cfg(target_arch = "x86_64")]
fn assert_madd_gives_plain_bits(
    w: &PackedRows,
    x: &QuantisedTokens,
    tokens: std::ops::Range<usize>,
    what: &str,
) {
    let (rows, n) = (w.rows, tokens.len());
    let (mut madd, mut plain) = (vec![f32::NAN; n * rows], vec![0.0; n * rows]);
    // SAFETY: callers check that the CPU has AVX2 and FMA.
    #[allow(unsafe_code)]
    unsafe {
        super::madd::product(w, x, tokens.clone(), &mut madd, rows)
    };
    product_plain(w, x, tokens, &mut plain, rows);
    assert_eq!(
        madd.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        plain.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        "{what}"
    );
}

/// AVX2's 4-bit products broadcast a tile of tokens for a chunk of groups, over spans of
/// blocks: rows longer than a span (one of 50 blocks: spans of 13 and a last of 11), more
/// groups than a chunk holds and a partial last group give the plain loops' bits too.
#[cfg(target_arch = "x86_64")]
#[test]
fn byte_multiply_adds_over_spans_and_chunks_give_the_plain_bits() {
    if !crate::wide() {
        return;
    }
    for (rows, cols) in [(141, 1536), (45, 1600), (333, 576)] {
        let (s, m, qs) = q4_rows(rows, cols);
        let mut w = PackedRows::default();
        w.pack_q4(&s, &m, &qs, cols);
        let x = QuantisedTokens::new(&values(11 * cols, 5), cols);
        for tokens in [0..11, 3..5, 10..11] {
            let what = format!("{rows} rows of {cols}, tokens {tokens:?}");
            assert_madd_gives_plain_bits(&w, &x, tokens, &what);
        }
    }
}

/// The scales and minimums of a group are laid out block by block as the plain loop lays
/// them, eight blocks at a time in AVX2 and the rest one by one, for rows of 3 to 50 blocks.
#[test]
fn packed_scales_are_those_of_the_plain_loop() {
    for cols in [96, 256, 288, 512, 576, 1600] {
        let rows = 21;
        let (s, m, qs) = q4_rows(rows, cols);
        let mut wide = PackedRows::default();
        wide.pack_q4(&s, &m, &qs, cols);
        crate::force_baseline(true);
        let mut plain = PackedRows::default();
        plain.pack_q4(&s, &m, &qs, cols);
        crate::force_baseline(false);
        assert_eq!(
            (&wide.scales, &wide.mins),
            (&plain.scales, &plain.mins),
            "{cols}"
        );
        // Block 9 of row 2 (group 0), and of row 17 (group 2, lane 1).
        let blocks = cols / BLOCK;
        if blocks > 9 {
            assert_eq!(wide.scales[9 * GROUP + 2], s[2 * blocks + 9]);
            assert_eq!(wide.mins[(2 * blocks + 9) * GROUP + 1], m[17 * blocks + 9]);
        }
    }
}
