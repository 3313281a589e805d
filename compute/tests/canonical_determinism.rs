//! The canonical path is bit-identical across runs, threads and build profiles.
//!
//! The golden hashes below were produced by the canonical path in the dev profile and
//! re-checked in the release profile (`cargo test --release`); any change of reduction
//! order, FMA contraction or math library changes them.

use gpuchain_compute::canonical;
use gpuchain_compute::digits::Digits;
use gpuchain_compute::models::{cnn, mlp};

const GOLDEN_MLP_LOGITS: &str = "c5c2b8c528a757f7f443abf008a93ea667b0f1a054d6c8c7836840ab2d90f080";
const GOLDEN_CNN_LOGITS: &str = "e8723118b464994287ce4c16af73151a5585ea8c12b885772599bf255cccef07";
const GOLDEN_MLP_STEP: &str = "f031b944ebbcd4c195a7be7ed4578e68e855c1ccb2d74972c534637c3b84a086";

fn hash_f32(v: &[f32]) -> String {
    let mut h = blake3::Hasher::new();
    for x in v {
        h.update(&x.to_le_bytes());
    }
    h.finalize().to_hex().to_string()
}

fn outputs() -> (String, String, String) {
    let d = Digits::builtin().unwrap();
    let mlp_logits = canonical::mlp::forward(&mlp::init_params(7), &d.pixels, d.len()).unwrap();
    let cnn_logits =
        canonical::cnn::forward(&cnn::init_params(7), &d.pixels[..200 * 64], 200).unwrap();
    let mut p = mlp::init_params(7);
    let mut vel = vec![0.0; p.numel()];
    canonical::mlp::sgd_step(
        &mut p,
        &mut vel,
        &d.pixels[..32 * 64],
        &d.labels[..32],
        0.1,
        0.9,
    )
    .unwrap();
    canonical::mlp::sgd_step(
        &mut p,
        &mut vel,
        &d.pixels[32 * 64..64 * 64],
        &d.labels[32..64],
        0.1,
        0.9,
    )
    .unwrap();
    (
        hash_f32(&mlp_logits),
        hash_f32(&cnn_logits),
        hash_f32(&p.flatten()),
    )
}

#[test]
fn canonical_outputs_are_bit_identical_across_runs_threads_and_profiles() {
    let first = outputs();
    assert_eq!(outputs(), first, "two runs differ");
    let threads: Vec<_> = (0..4).map(|_| std::thread::spawn(outputs)).collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), first, "a concurrent run differs");
    }
    assert_eq!(
        (first.0.as_str(), first.1.as_str(), first.2.as_str()),
        (GOLDEN_MLP_LOGITS, GOLDEN_CNN_LOGITS, GOLDEN_MLP_STEP),
        "canonical outputs changed (profile: {})",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
}
