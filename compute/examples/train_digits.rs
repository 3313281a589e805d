//! Trains the digits MLP and CNN with burn (Adam, CPU backend) and writes their weights to
//! `data/models/digits-{mlp,cnn}.safetensors`, with the test accuracy of each (canonical
//! forward pass, fixed split) printed as JSON. Run in release:
//!
//! ```text
//! cargo run --release -p gpuchain-compute --example train_digits
//! ```

use gpuchain_compute::backend::CpuAutodiff;
use gpuchain_compute::digits::Digits;
use gpuchain_compute::models::fit::{fit_digits, FitConfig};
use gpuchain_compute::{job::digits_logits, Backend};
use gpuchain_jobspec::ModelArch;

fn main() {
    let data = Digits::builtin().expect("embedded digits");
    let (train, test) = data.split();
    let out = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/models");
    std::fs::create_dir_all(&out).expect("create data/models");
    for (arch, name, epochs) in [
        (ModelArch::DigitsMlp, "digits-mlp", 20),
        (ModelArch::DigitsCnn, "digits-cnn", 30),
    ] {
        let cfg = FitConfig::new().with_epochs(epochs).with_seed(1);
        let params =
            fit_digits::<CpuAutodiff>(arch, &train, &cfg, &Default::default()).expect("training");
        let logits = digits_logits(
            arch,
            &params,
            &test.pixels,
            test.len(),
            256,
            Backend::Canonical,
        )
        .expect("forward");
        let correct = logits
            .chunks(10)
            .zip(&test.labels)
            .filter(|(l, y)| gpuchain_compute::canonical::math::argmax(l) == usize::from(**y))
            .count();
        let bytes = params.to_safetensors().expect("encode");
        let path = out.join(format!("{name}.safetensors"));
        std::fs::write(&path, &bytes).expect("write weights");
        println!(
            "{}",
            serde_json::json!({ "model": name, "epochs": epochs, "test_accuracy": correct as f64 / test.len() as f64,
                                "blake3": blake3::hash(&bytes).to_hex().to_string(), "bytes": bytes.len(), "path": path })
        );
    }
}
