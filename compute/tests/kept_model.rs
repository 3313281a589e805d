//! Jobs of one GGUF model, one after another, as a provider or a verifier runs them: the
//! first reads and checks the weights blob and builds the row decoder, the next ones use
//! what it kept (by the blob's hash), and a job of other weights reads its own. Its own test
//! binary: the kept model is one per process, and other tests' jobs would replace it.

mod common;

use gpuchain_compute::blob::BlobStore;
use gpuchain_compute::gguf::{self, Gguf};
use gpuchain_compute::llama::{answer_texts, check_generation};
use gpuchain_compute::{run_job, Backend};
use gpuchain_jobspec::JobSpec;

#[test]
fn the_next_job_of_a_model_uses_what_the_first_kept() {
    let bytes = std::fs::read(common::smollm2_file()).unwrap();
    let eos = gguf::eos_token(&Gguf::parse(&bytes).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let chat = |q: &str| serde_json::json!([{ "messages": [{ "role": "user", "content": q }] }]);
    let input = serde_json::to_vec(&chat("What is the capital of France?")).unwrap();
    let spec = common::greedy_gguf_job(&store, &bytes, &input, 1, 10, vec![eos]);
    let first = run_job(&JobSpec::Inference(spec.clone()), &store, Backend::Cpu).unwrap();

    // With the weights blob gone from the store, the next job and its check still run: on
    // the kept decoder, chat template and shape, to the same answer.
    std::fs::remove_file(store.path(&spec.weights.hash())).unwrap();
    let again = run_job(&JobSpec::Inference(spec.clone()), &store, Backend::Cpu).unwrap();
    assert_eq!(again.bytes, first.bytes);
    assert!(check_generation(&spec, &store, Backend::Cpu, &first.bytes)
        .unwrap()
        .accepted());
    // Another question to the same model: its own answer.
    let other = serde_json::to_vec(&chat("Name three primary colors.")).unwrap();
    let next = common::greedy_gguf_job(&store, &bytes, &other, 1, 10, vec![eos]);
    std::fs::remove_file(store.path(&next.weights.hash())).unwrap();
    let out = run_job(&JobSpec::Inference(next.clone()), &store, Backend::Cpu).unwrap();
    assert_ne!(out.bytes, first.bytes);

    // Other weights (the same file with one byte of its tensor data changed) are other
    // bytes: their blob is read, and without it the job fails.
    let mut changed = bytes.clone();
    let last = changed.len() - 1;
    changed[last] ^= 1;
    let spec = common::greedy_gguf_job(&store, &changed, &input, 1, 10, vec![eos]);
    run_job(&JobSpec::Inference(spec.clone()), &store, Backend::Cpu).unwrap();
    std::fs::remove_file(store.path(&spec.weights.hash())).unwrap();
    let bytes_again = common::greedy_gguf_job(&store, &bytes, &input, 1, 10, vec![eos]);
    // The first model is no longer the kept one, so its job reads its blob (put again
    // above) and answers as before.
    let answers = answer_texts(
        &bytes_again,
        &store,
        &run_job(
            &JobSpec::Inference(bytes_again.clone()),
            &store,
            Backend::Cpu,
        )
        .unwrap()
        .bytes,
    )
    .unwrap()
    .unwrap();
    assert!(answers[0].contains("Paris"), "{answers:?}");
    assert!(run_job(&JobSpec::Inference(spec), &store, Backend::Cpu).is_err());
}
