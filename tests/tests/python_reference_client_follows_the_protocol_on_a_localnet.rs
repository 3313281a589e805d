//! The independent Python client (clients/python, written from docs/protocol.md alone)
//! reproduces every test vector of the document, then, against a real localnet, opens a key
//! file, verifies headers and proofs itself, and sends a message of every module.

use std::path::PathBuf;
use std::process::Command;

use gpuchain_tests::TestNet;

const GPU: u128 = 1_000_000;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// The reference client's interpreter: the virtual environment scripts/python-env.sh makes
/// (PyNaCl and blake3), created on first use.
fn python() -> anyhow::Result<PathBuf> {
    let out = Command::new("bash")
        .arg(repo().join("scripts/python-env.sh"))
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "scripts/python-env.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(PathBuf::from(String::from_utf8(out.stdout)?.trim()))
}

fn run(python: &PathBuf, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new(python)
        .args(args)
        .current_dir(repo())
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    anyhow::ensure!(out.status.success(), "{args:?} failed:\n{text}");
    Ok(text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_reference_client_follows_the_protocol_on_a_localnet() -> anyhow::Result<()> {
    let python = python()?;
    let vectors = run(&python, &["clients/python/tests/test_vectors.py"])?;
    assert!(vectors.contains("\nOK"), "{vectors}");

    let net = TestNet::start(1, &[("alice", 10_000 * GPU)]).await?;
    let key_file = net.net.keys_dir.join("alice.json");
    let out = run(
        &python,
        &[
            "clients/python/tests/e2e_localnet.py",
            "--node",
            &net.net.nodes[0].rpc_url,
            "--key-file",
            key_file.to_str().unwrap_or_default(),
        ],
    )?;
    println!("{out}");
    assert!(out.contains(" passed, 0 failed"), "{out}");
    Ok(())
}
