//! The provider binary's local commands.

use std::process::Command;

use gpuchain_compute::models::mlp;
use gpuchain_compute::tensor_io::encode_f32;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gpuchain-provider"))
}

/// A job spec's reference to the blob `b`.
fn blob_ref(b: &[u8]) -> serde_json::Value {
    serde_json::json!({ "blake3": blake3::hash(b).to_hex().to_string(), "size": b.len() })
}

/// Runs `cmd`, requires it to succeed, and reads what it printed as JSON.
fn run_json(cmd: &mut Command) -> serde_json::Value {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn probe_reports_the_machine_in_json_and_text() {
    let out = bin().args(["probe", "--output", "json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["cpu_threads"].as_u64().unwrap() >= 1);
    assert!(v["gpus"].is_array());
    // Either NVML answered, or the machine is described as CPU-only.
    assert!(
        v["driver_version"].is_string() || v["nvml_error"].as_str().unwrap().contains("CPU-only")
    );
    let out = bin().arg("probe").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("CPU"));
}

#[test]
fn run_job_runs_a_spec_locally_and_rejects_bad_specs() {
    let dir = tempfile::tempdir().unwrap();
    let weights = mlp::init_params(4).to_safetensors().unwrap();
    let input = encode_f32(&[3, 64], &[8.0; 192]);
    let (wp, ip) = (dir.path().join("w.safetensors"), dir.path().join("x.gct"));
    std::fs::write(&wp, &weights).unwrap();
    std::fs::write(&ip, &input).unwrap();
    let spec = serde_json::json!({ "kind": "inference", "arch": "digits_mlp", "weights": blob_ref(&weights), "input": blob_ref(&input), "batch_size": 2 });
    let spec_path = dir.path().join("spec.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    let blobs = dir.path().join("blobs");
    let v = run_json(
        bin()
            .args([
                "run-job",
                spec_path.to_str().unwrap(),
                "--backend",
                "canonical",
                "--output",
                "json",
                "--blobs",
                blobs.to_str().unwrap(),
            ])
            .args([
                "--add-blob",
                wp.to_str().unwrap(),
                "--add-blob",
                ip.to_str().unwrap(),
            ]),
    );
    let path = v["result_path"].as_str().unwrap();
    let result = std::fs::read(path).unwrap();
    assert_eq!(
        v["result_blake3"].as_str().unwrap(),
        blake3::hash(&result).to_hex().as_str()
    );
    assert_eq!(result.len(), 8 + 8 + 3 * 10 * 4);

    std::fs::write(&spec_path, spec.to_string().replace("digits_mlp", "vgg16")).unwrap();
    let out = bin()
        .args([
            "run-job",
            spec_path.to_str().unwrap(),
            "--blobs",
            blobs.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown variant `vgg16`"), "{err}");
}

#[test]
fn init_writes_a_config_and_register_dry_run_offers_a_cpu_machine_as_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("provider.toml");
    let home = dir.path().join("home");
    let args = |extra: &[&str]| {
        let mut v = vec![
            "init".to_string(),
            "--config".into(),
            config.to_string_lossy().into(),
            "--home".into(),
            home.to_string_lossy().into(),
            "--key".into(),
            "p1".into(),
            "--data-dir".into(),
            dir.path().join("data").to_string_lossy().into(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let out = bin().args(args(&[])).output().unwrap();
    assert!(!out.status.success(), "a missing key needs --create-key");
    let out = bin().args(args(&["--create-key"])).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("gpu1"));
    let out = bin().args(args(&[])).output().unwrap();
    assert!(!out.status.success(), "no overwrite without --force");
    let out = bin()
        .args([
            "register",
            "--dry-run",
            "--config",
            config.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let attrs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(attrs["endpoint_url"], "http://127.0.0.1:7070");
    if gpuchain_compute::hardware::nvml_gpu_count() == 0 || !cfg!(feature = "cuda") {
        assert_eq!(
            attrs["class"], "cpu",
            "no NVIDIA driver (or no CUDA build): CPU class"
        );
        assert_eq!(attrs["gpu_count"], 0);
    }
}

#[test]
fn chat_answers_a_question_with_the_real_model() {
    let root = std::env::var_os("GPUCHAIN_MODELS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var("HOME").unwrap_or_default())
                .join(".cache/gpuchain/models")
        });
    let model = root.join("smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf");
    if !model.exists() {
        let script =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/fetch-smollm2.sh");
        let status = Command::new("bash")
            .arg(script)
            .arg(&root)
            .status()
            .unwrap();
        assert!(status.success(), "fetching SmolLM2-135M-Instruct failed");
    }
    let out = bin()
        .args(["chat", "--backend", "cpu", "--max-tokens", "12", "--model"])
        .arg(&model)
        .arg("What is the capital of France?")
        .output()
        .unwrap();
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && answer.contains("Paris"),
        "{answer}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The same question as a job spec with a text input: run-job prints the answer.
    let dir = tempfile::tempdir().unwrap();
    let weights = std::fs::read(&model).unwrap();
    let input = serde_json::to_vec(&serde_json::json!([
        { "messages": [{ "role": "user", "content": "What is the capital of France?" }] },
        "Water boils at a temperature of"
    ]))
    .unwrap();
    let input_path = dir.path().join("chat.json");
    std::fs::write(&input_path, &input).unwrap();
    let spec = serde_json::json!({
        "kind": "inference", "arch": "llama_gguf", "weights": blob_ref(&weights),
        "input": blob_ref(&input), "batch_size": 2,
        "generation": { "max_new_tokens": 12, "sampling": { "mode": "greedy" }, "stop_tokens": [2] }
    });
    let spec_path = dir.path().join("spec.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    let blobs = dir.path().join("blobs");
    let summary = run_json(
        bin()
            .args(["run-job", "--backend", "cpu", "--output", "json", "--blobs"])
            .arg(&blobs)
            .arg("--add-blob")
            .arg(&model)
            .arg("--add-blob")
            .arg(&input_path)
            .arg(&spec_path),
    );
    let answers = summary["answers"].as_array().unwrap();
    assert_eq!(answers.len(), 2, "{summary}");
    assert!(answers[0].as_str().unwrap().contains("Paris"), "{summary}");

    let missing = bin()
        .args(["chat", "--model", "/nonexistent.gguf", "hello"])
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent.gguf"));
}
