//! Speed of the integer products alone, one thread: a layer's shapes of SmolLM2-135M (the
//! verifier's teacher-forced pass over a 37-token prompt and a 128-token answer), 4-bit
//! rows, and the output layer's 8-bit rows. Prints billions of multiply-adds a second, the
//! median of `RUNS` (default 15) runs each.
//!
//! `cargo run --example int8_speed [RUNS]`

use std::time::Instant;

use gpuchain_kernels::{int8_product, PackedRows, QuantisedTokens};

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|r| r.parse().ok())
        .unwrap_or(15);
    let tokens = 165;
    println!("int8 products, one thread, {tokens} tokens, {runs} runs");
    for (name, rows, cols, eight_bit) in [
        ("q/k/v (960 x 576, 4-bit)", 960, 576, false),
        ("gate/up (3072 x 576, 4-bit)", 3072, 576, false),
        ("down (576 x 1536, 4-bit)", 576, 1536, false),
        ("output, 256 rows (256 x 576, 8-bit)", 256, 576, true),
    ] {
        let blocks = cols / 32;
        let xs: Vec<f32> = (0..tokens * cols)
            .map(|i| ((i * 7919 % 1013) as f32 - 506.0) / 97.0)
            .collect();
        let x = QuantisedTokens::new(&xs, cols);
        let scales: Vec<f32> = (0..rows * blocks)
            .map(|i| 0.01 + (i % 7) as f32 * 1e-3)
            .collect();
        let mut w = PackedRows::default();
        if eight_bit {
            let qs: Vec<i8> = (0..rows * cols).map(|i| (i * 31 % 251) as i8).collect();
            w.pack_q8(&scales, &qs, cols);
        } else {
            let mins: Vec<f32> = scales.iter().map(|s| -8.0 * s).collect();
            let qs: Vec<u8> = (0..rows * cols / 2).map(|i| (i * 37 % 256) as u8).collect();
            w.pack_q4(&scales, &mins, &qs, cols);
        }
        let mut out = vec![0.0f32; tokens * rows];
        let mut rates = Vec::new();
        for _ in 0..runs {
            let t = Instant::now();
            int8_product(&w, &x, &mut out, rows);
            let s = t.elapsed().as_secs_f64();
            rates.push((tokens * rows * cols) as f64 / s / 1e9);
        }
        rates.sort_by(f64::total_cmp);
        println!(
            "{name}: {:.1} G multiply-adds/s (median; {:.1}-{:.1}), checksum {:.3}",
            rates[runs / 2],
            rates[0],
            rates[runs - 1],
            out.iter().map(|v| f64::from(*v)).sum::<f64>()
        );
    }
}
