//! A provider's whole path over real HTTP: fetch a job's blobs from a blob server, run the
//! job, upload the result, and a verifier re-running it on the canonical path agrees.

use gpuchain_compute::blob::{serve, BlobFetcher, BlobServer, BlobStore, FetchPolicy};
use gpuchain_compute::tensor_io::encode_f32;
use gpuchain_compute::{compare, fetch_job_blobs, run_job, Backend};
use gpuchain_jobspec::{InferenceSpec, JobSpec, ModelArch};

#[tokio::test]
async fn fetch_run_upload_and_verify_a_digits_job() {
    let (client_dir, provider_dir, verifier_dir) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    // The client serves the weights and the input.
    let client_store = BlobStore::open(client_dir.path()).unwrap();
    let (addr, _server) = serve(
        BlobServer::new(client_store.clone()),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let weights_bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/models/digits-cnn.safetensors"
    ))
    .unwrap();
    let digits = gpuchain_compute::digits::Digits::builtin().unwrap();
    let pixels: Vec<f32> = digits.pixels[..100 * 64].iter().map(|v| v * 16.0).collect();
    let mut weights = client_store.put(&weights_bytes).unwrap();
    let mut input = client_store.put(&encode_f32(&[100, 64], &pixels)).unwrap();
    weights.urls = vec![format!("http://{addr}/blob/{}", weights.hash())];
    input.urls = vec![format!("http://{addr}/blob/{}", input.hash())];
    let spec = JobSpec::Inference(InferenceSpec {
        arch: ModelArch::DigitsCnn,
        weights,
        tokenizer: None,
        input,
        batch_size: 32,
        llama: None,
        generation: None,
        tolerance: None,
    });

    // The provider fetches, runs on its fast backend and uploads the result.
    let provider = BlobFetcher::with_policy(
        BlobStore::open(provider_dir.path()).unwrap(),
        FetchPolicy::any_host(),
    )
    .unwrap();
    fetch_job_blobs(&spec, &provider, &|_| {}).await.unwrap();
    let provider_store = provider.store().clone();
    let spec2 = spec.clone();
    let result =
        tokio::task::spawn_blocking(move || run_job(&spec2, &provider_store, Backend::auto()))
            .await
            .unwrap()
            .unwrap();
    let put = reqwest::Client::new()
        .put(format!("http://{addr}/blob/{}", result.hash))
        .body(result.bytes.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 201);

    // A verifier fetches the same blobs and the result, re-runs canonically and compares.
    let verifier = BlobFetcher::with_policy(
        BlobStore::open(verifier_dir.path()).unwrap(),
        FetchPolicy::any_host(),
    )
    .unwrap();
    fetch_job_blobs(&spec, &verifier, &|_| {}).await.unwrap();
    let result_ref = gpuchain_jobspec::BlobRef {
        blake3: result.hash.0,
        size: result.bytes.len() as u64,
        urls: vec![format!("http://{addr}/blob/{}", result.hash)],
    };
    let fetched = std::fs::read(verifier.fetch(&result_ref, &|_| {}).await.unwrap()).unwrap();
    let verifier_store = verifier.store().clone();
    let spec3 = spec.clone();
    let reference =
        tokio::task::spawn_blocking(move || run_job(&spec3, &verifier_store, Backend::Canonical))
            .await
            .unwrap()
            .unwrap();
    let verdict = compare(spec.kind(), &spec.tolerance(), &fetched, &reference.bytes).unwrap();
    assert!(verdict.accepted(), "{verdict:?}");
}
