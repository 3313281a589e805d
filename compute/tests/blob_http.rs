//! The blob fetcher and server over real HTTP on 127.0.0.1.

use std::net::SocketAddr;

use gpuchain_compute::blob::{serve, BlobFetcher, BlobServer, BlobStore, FetchPolicy};
use gpuchain_compute::Error;
use gpuchain_jobspec::BlobRef;

async fn server(dir: &std::path::Path) -> (BlobStore, SocketAddr) {
    let store = BlobStore::open(dir).unwrap();
    let (addr, _task) = serve(
        BlobServer::new(store.clone()).max_upload_bytes(1 << 20),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    (store, addr)
}

fn url(addr: SocketAddr, blob: &BlobRef) -> String {
    format!("http://{addr}/blob/{}", blob.hash().to_hex())
}

#[tokio::test]
async fn fetch_verifies_and_falls_back_to_the_next_mirror() {
    let (a, b, local) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let (good_store, good) = server(a.path()).await;
    let (evil_store, evil) = server(b.path()).await;
    let payload: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let mut blob = good_store.put(&payload).unwrap();
    // The evil mirror serves different bytes under the same name.
    std::fs::write(evil_store.path(&blob.hash()), b"not the weights").unwrap();
    blob.urls = vec![
        url(evil, &blob),
        format!("http://{good}/blob/{}", "00".repeat(32)),
        url(good, &blob),
    ];
    let fetcher = BlobFetcher::with_policy(
        BlobStore::open(local.path()).unwrap(),
        FetchPolicy::any_host(),
    )
    .unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let path = fetcher
        .fetch(&blob, &|p| seen.lock().unwrap().push(p.received))
        .await
        .unwrap();
    assert_eq!(std::fs::read(path).unwrap(), payload);
    let seen = seen.into_inner().unwrap();
    assert!(
        seen.len() >= 2 && *seen.last().unwrap() == payload.len() as u64,
        "progress {seen:?}"
    );
    assert_eq!(fetcher.store().get(&blob).unwrap(), payload);
}

#[tokio::test]
async fn a_blob_no_mirror_serves_correctly_is_rejected_with_reasons() {
    let (a, local) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (store, addr) = server(a.path()).await;
    let mut blob = store.put(b"the real bytes").unwrap();
    std::fs::write(store.path(&blob.hash()), b"the fake bytes").unwrap();
    blob.urls = vec![url(addr, &blob)];
    let fetcher = BlobFetcher::with_policy(
        BlobStore::open(local.path()).unwrap(),
        FetchPolicy::any_host(),
    )
    .unwrap();
    let err = fetcher.fetch(&blob, &|_| {}).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::BlobUnavailable { .. }), "{text}");
    assert!(text.contains("blob hash mismatch"), "{text}");
    assert!(
        !fetcher.store().contains(&blob.hash()),
        "a bad blob must never be stored"
    );

    // A wrong size is reported as such.
    std::fs::write(store.path(&blob.hash()), b"the real bytes, and more").unwrap();
    let err = fetcher.fetch(&blob, &|_| {}).await.unwrap_err().to_string();
    assert!(err.contains("bytes but its reference says 14"), "{err}");

    // Unreachable mirror.
    blob.urls = vec!["http://127.0.0.1:9/blob/x".into()];
    let err = fetcher.fetch(&blob, &|_| {}).await.unwrap_err().to_string();
    assert!(err.contains("127.0.0.1:9"), "{err}");
}

#[tokio::test]
async fn uploads_are_checked_against_their_name() {
    let a = tempfile::tempdir().unwrap();
    let (store, addr) = server(a.path()).await;
    let client = reqwest::Client::new();
    let hash = blake3::hash(b"model bytes").to_hex().to_string();
    let put = |name: String, body: &'static [u8]| {
        client
            .put(format!("http://{addr}/blob/{name}"))
            .body(body)
            .send()
    };
    assert_eq!(
        put(hash.clone(), b"model bytes").await.unwrap().status(),
        201
    );
    let bad = put(hash.clone(), b"other bytes").await.unwrap();
    assert_eq!(bad.status(), 422);
    assert!(bad.text().await.unwrap().contains("hash mismatch"));
    let post = client
        .post(format!("http://{addr}/blob"))
        .body("posted")
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), 201);
    assert_eq!(
        post.text().await.unwrap(),
        blake3::hash(b"posted").to_hex().to_string()
    );
    let got = client
        .get(format!("http://{addr}/blob/{hash}"))
        .send()
        .await
        .unwrap();
    assert_eq!(got.bytes().await.unwrap().as_ref(), b"model bytes");
    assert_eq!(
        client
            .get(format!("http://{addr}/blob/nothex"))
            .send()
            .await
            .unwrap()
            .status(),
        400
    );
    let big = vec![0u8; 2 << 20];
    let too_big = client
        .post(format!("http://{addr}/blob"))
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(too_big.status(), 413);
    assert_eq!(
        std::fs::read_dir(store.dir().join("tmp")).unwrap().count(),
        0,
        "temporary files are cleaned up"
    );
}

#[tokio::test]
async fn a_fetcher_for_public_hosts_never_reaches_a_local_server() {
    let (a, local) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (store, addr) = server(a.path()).await;
    let mut blob = store.put(b"bytes served on loopback").unwrap();
    blob.urls = vec![
        url(addr, &blob),
        format!(
            "http://localhost:{}/blob/{}",
            addr.port(),
            blob.hash().to_hex()
        ),
    ];
    let strict = BlobFetcher::new(BlobStore::open(local.path()).unwrap()).unwrap();
    let err = strict.fetch(&blob, &|_| {}).await.unwrap_err().to_string();
    assert!(err.contains("127.0.0.1 is not a public address"), "{err}");
    assert!(err.contains("localhost is not a public host"), "{err}");
    assert!(!strict.store().contains(&blob.hash()));
    // The same blob from the same server, for a fetcher allowed private hosts.
    let open = BlobFetcher::with_policy(
        BlobStore::open(local.path()).unwrap(),
        FetchPolicy::any_host(),
    )
    .unwrap();
    open.fetch(&blob, &|_| {}).await.unwrap();
}
