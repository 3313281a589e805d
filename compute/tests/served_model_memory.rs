//! What a served model costs in memory: SmolLM2-135M-Instruct loaded as `serve-model` loads
//! it (decoder, tokenizers, chat template) stays within 1.5× its GGUF file resident, once
//! loading is over. The only test in its binary, so that nothing else allocates meanwhile.
//!
//! Needs the checkpoint (see `tests/smollm2.rs`).

mod common;

use gpuchain_compute::gguf;
use gpuchain_compute::serving::ChatModel;

/// This process's resident memory in bytes (Linux `VmRSS`).
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    kib * 1024
}

#[test]
fn a_loaded_chat_model_stays_within_one_and_a_half_times_its_file() {
    let file = common::smollm2_file();
    let file_bytes = gguf::file::model_size(&file).unwrap() as u64;
    let before = resident_bytes();
    let model = ChatModel::load(&file, "smollm2".into()).unwrap();
    let grown = resident_bytes().saturating_sub(before);
    // The model is whole: it answers.
    let prompt = model
        .chat
        .plain
        .encode("The capital of France is", false)
        .unwrap();
    let next = model
        .decoder
        .generate(prompt.get_ids(), 1, 1, &gpuchain_jobspec::Sampling::Greedy);
    assert_eq!(next.len(), 1);
    assert!(
        grown * 2 <= file_bytes * 3,
        "resident grew by {grown} bytes loading a {file_bytes}-byte model (over 1.5×)"
    );
    assert!(
        grown >= file_bytes,
        "resident grew by only {grown} bytes: the weights ({file_bytes} bytes in the file) are not all counted"
    );
}
