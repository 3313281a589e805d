//! What this CPU's vector pipes do a cycle, for the instructions the integer products of
//! the verifier's pass are built from: the clock from a chain of dependent 32-bit adds (one
//! cycle each), then how many byte multiply-adds (`vpmaddubsw`), widening multiply-adds
//! (`vpmaddwd`) and fused f32 multiply-adds issue a cycle, alone and mixed. A 4-bit block of
//! eight rows and one token needs eight byte multiply-adds and one widening, plus a multiply
//! and two fused multiply-adds; where the integer multiplies share one pipe with the f32
//! ones, that is the products' bound.
//!
//! `cargo run --example avx2_pipes [MILLIONS]` (default 100 million iterations a loop)

use std::arch::x86_64::{
    __m256, __m256i, _mm256_add_epi32, _mm256_cvtss_f32, _mm256_extract_epi64, _mm256_fmadd_ps,
    _mm256_madd_epi16, _mm256_maddubs_epi16, _mm256_set1_epi16, _mm256_set1_epi32,
    _mm256_set1_epi8, _mm256_set1_ps, _mm256_xor_si256,
};
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let millions: u64 = std::env::args()
        .nth(1)
        .and_then(|m| m.parse().ok())
        .unwrap_or(100);
    if !is_x86_feature_detected!("avx2") || !is_x86_feature_detected!("fma") {
        println!("this CPU has no AVX2 and FMA");
        return;
    }
    let n = millions * 1_000_000;
    let seconds = |f: &dyn Fn() -> u64| {
        let t = Instant::now();
        black_box(f());
        t.elapsed().as_secs_f64()
    };
    // Eight dependent single-cycle operations an iteration (four adds, four xors).
    // SAFETY: AVX2 and FMA were checked above.
    #[allow(unsafe_code)]
    let [adds, bytes, widening, fused, mixed] = unsafe {
        [
            seconds(&|| dependent_adds(n)),
            seconds(&|| byte_multiply_adds(n)),
            seconds(&|| widening_multiply_adds(n)),
            seconds(&|| fused_multiply_adds(n)),
            seconds(&|| mixed_chains(n)),
        ]
    };
    let clock = 8.0 * n as f64 / adds;
    println!(
        "clock: {:.2} GHz (a chain of dependent vpaddd and vpxor)",
        clock / 1e9
    );
    let per_cycle = |ops: u64, s: f64| ops as f64 / s / clock;
    println!("vpmaddubsw: {:.2} a cycle", per_cycle(8 * n, bytes));
    println!("vpmaddwd: {:.2} a cycle", per_cycle(8 * n, widening));
    println!("vfmadd231ps: {:.2} a cycle", per_cycle(10 * n, fused));
    println!(
        "6 vpmaddubsw + 6 vfmadd231ps: {:.2} cycles (6.00 where they issue on different pipes)",
        mixed * clock / n as f64
    );
}

/// Four dependent adds and four dependent xors an iteration.
#[target_feature(enable = "avx2")]
fn dependent_adds(n: u64) -> u64 {
    let b = black_box(_mm256_set1_epi32(3));
    let c = black_box(_mm256_set1_epi32(5));
    let mut a = _mm256_set1_epi32(1);
    for _ in 0..n {
        for _ in 0..4 {
            a = _mm256_xor_si256(_mm256_add_epi32(a, b), c);
        }
    }
    lane(a)
}

/// Eight independent chains of byte multiply-adds, each waiting on its own last result.
#[target_feature(enable = "avx2")]
fn byte_multiply_adds(n: u64) -> u64 {
    let b = black_box(_mm256_set1_epi8(3));
    let mut a = [_mm256_set1_epi8(1); 8];
    for _ in 0..n {
        for a in &mut a {
            *a = _mm256_maddubs_epi16(*a, b);
        }
    }
    a.iter().map(|a| lane(*a)).sum()
}

/// Eight independent chains of widening multiply-adds.
#[target_feature(enable = "avx2")]
fn widening_multiply_adds(n: u64) -> u64 {
    let b = black_box(_mm256_set1_epi16(3));
    let mut a = [_mm256_set1_epi16(1); 8];
    for _ in 0..n {
        for a in &mut a {
            *a = _mm256_madd_epi16(*a, b);
        }
    }
    a.iter().map(|a| lane(*a)).sum()
}

/// Ten independent chains of f32 fused multiply-adds (a fused multiply-add takes up to five
/// cycles: eight chains would measure that, not the pipes).
#[target_feature(enable = "avx2,fma")]
fn fused_multiply_adds(n: u64) -> u64 {
    let b = black_box(_mm256_set1_ps(0.5));
    let mut a = [_mm256_set1_ps(1.0); 10];
    for _ in 0..n {
        for a in &mut a {
            *a = _mm256_fmadd_ps(*a, b, b);
        }
    }
    a.iter().map(|a| lane_ps(*a)).sum()
}

/// Six chains of byte multiply-adds beside six of fused multiply-adds (enough of each that
/// neither waits on its own latency).
#[target_feature(enable = "avx2,fma")]
fn mixed_chains(n: u64) -> u64 {
    let b = black_box(_mm256_set1_epi8(3));
    let f = black_box(_mm256_set1_ps(0.5));
    let mut a = [_mm256_set1_epi8(1); 6];
    let mut x = [_mm256_set1_ps(1.0); 6];
    for _ in 0..n {
        for (a, x) in a.iter_mut().zip(&mut x) {
            *a = _mm256_maddubs_epi16(*a, b);
            *x = _mm256_fmadd_ps(*x, f, f);
        }
    }
    a.iter().map(|a| lane(*a)).sum::<u64>() + x.iter().map(|x| lane_ps(*x)).sum::<u64>()
}

#[target_feature(enable = "avx2")]
fn lane(v: __m256i) -> u64 {
    _mm256_extract_epi64::<0>(v) as u64
}

#[target_feature(enable = "avx2")]
fn lane_ps(v: __m256) -> u64 {
    u64::from(_mm256_cvtss_f32(v).to_bits())
}
