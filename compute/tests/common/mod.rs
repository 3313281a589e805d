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

/// A greedy `llama_gguf` generation job: `weights` and `input` stored in `store`, rows in
/// batches of `batch_size`, `max_new_tokens` a row, ending at any of `stop_tokens`.
#[allow(dead_code)] // not every test that shares this module runs GGUF jobs
pub(crate) fn greedy_gguf_job(
    store: &gpuchain_compute::blob::BlobStore,
    weights: &[u8],
    input: &[u8],
    batch_size: u32,
    max_new_tokens: u32,
    stop_tokens: Vec<u32>,
) -> gpuchain_jobspec::InferenceSpec {
    gpuchain_jobspec::InferenceSpec {
        arch: gpuchain_jobspec::ModelArch::LlamaGguf,
        weights: store.put(weights).unwrap(),
        tokenizer: None,
        input: store.put(input).unwrap(),
        batch_size,
        llama: None,
        generation: Some(gpuchain_jobspec::GenerationSpec {
            max_new_tokens,
            sampling: gpuchain_jobspec::Sampling::Greedy,
            stop_tokens,
        }),
        tolerance: None,
    }
}

/// The Rotten Tomatoes review snippets (`rotten-tomatoes/reviews.csv`).
#[allow(dead_code)]
pub(crate) fn reviews_csv() -> PathBuf {
    cached("rotten-tomatoes/reviews.csv", "fetch-reviews.sh")
}
