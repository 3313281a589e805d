//! What the model tests share: the real checkpoints, fetched once into the model cache
//! (`$GPUCHAIN_MODELS`, or `~/.cache/gpuchain/models`) by their scripts when absent.

use std::path::{Path, PathBuf};

/// `file` under the model cache, fetched with `scripts/SCRIPT` when absent.
fn cached(file: &str, script: &str) -> PathBuf {
    let root = std::env::var_os("GPUCHAIN_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/gpuchain/models")
        });
    let path = root.join(file);
    if !path.exists() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scripts")
            .join(script);
        let status = std::process::Command::new("bash")
            .arg(&script)
            .arg(&root)
            .status()
            .expect("run the fetch script");
        assert!(
            status.success(),
            "could not fetch {file} with {}",
            script.display()
        );
    }
    path
}

/// The SmolLM2-135M-Instruct GGUF file.
#[allow(dead_code)] // not every test that shares this module uses both models
pub(crate) fn smollm2_file() -> PathBuf {
    cached(
        "smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf",
        "fetch-smollm2.sh",
    )
}

/// The all-MiniLM-L6-v2 directory (`model.safetensors`, `tokenizer.json`, …).
#[allow(dead_code)]
pub(crate) fn minilm_dir() -> PathBuf {
    cached("all-minilm-l6-v2/model.safetensors", "fetch-minilm.sh")
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}
