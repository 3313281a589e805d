//! What the SmolLM2 tests share: the checkpoint, fetched once.

use std::path::PathBuf;

/// The SmolLM2-135M-Instruct GGUF: `$GPUCHAIN_MODELS/smollm2-135m-instruct` or
/// `~/.cache/gpuchain/models/smollm2-135m-instruct`, fetched with `scripts/fetch-smollm2.sh`
/// when absent.
pub(crate) fn smollm2_file() -> PathBuf {
    let root = std::env::var_os("GPUCHAIN_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/gpuchain/models")
        });
    let file = root.join("smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf");
    if !file.exists() {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/fetch-smollm2.sh");
        let status = std::process::Command::new("bash")
            .arg(&script)
            .arg(&root)
            .status()
            .expect("run fetch-smollm2.sh");
        assert!(
            status.success(),
            "could not fetch SmolLM2 with {}",
            script.display()
        );
    }
    file
}
