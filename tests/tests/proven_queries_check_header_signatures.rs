//! Proven queries trust a header only when the validators the light client trusts signed
//! it: a query on a real localnet verifies and moves the trust forward, a header whose app
//! hash was altered is refused, and pinning a wrong header hash is refused.

use gpuchain_client::light::{fetch_light_block, verify_from};
use gpuchain_client::{ChainClient, LightClient, LightError};
use gpuchain_tests::{run_json, TestNet};
use tendermint::Hash;
use tendermint_light_client_verifier::Verdict;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proven_queries_check_header_signatures() -> anyhow::Result<()> {
    let net = TestNet::start(2, &[("alice", 5_000_000)]).await?;
    let dir = tempfile::tempdir()?;
    let store = dir.path().join("light.json");
    let alice = net.net.account("alice")?;
    let key = gpuchain_bank::state_key::account(&alice);

    let client = net.client(0)?.with_light_client(LightClient::open(&store)?);
    assert!(client.verifies_headers());
    let first = client.query_verified(&key).await?;
    assert_eq!(
        first
            .value
            .map(|v| borsh::from_slice::<gpuchain_bank::Account>(&v))
            .transpose()?
            .map(|a| a.balance),
        Some(5_000_000)
    );
    let trusted_at = LightClient::open(&store)?.trusted_height().unwrap_or(0);
    assert_eq!(
        trusted_at,
        first.height + 1,
        "trust starts at the verified header"
    );

    // Later headers verify from the stored trust, on the other node too.
    let plain = net.client(1)?;
    plain
        .wait_for_height(trusted_at + 3, std::time::Duration::from_secs(60))
        .await?;
    let other = net.client(1)?.with_light_client(LightClient::open(&store)?);
    let second = other.query_verified(&key).await?;
    assert!(second.height > first.height);
    assert_eq!(
        LightClient::open(&store)?.trusted_height(),
        Some(second.height + 1)
    );

    // A header with a different app hash is not what the validators signed.
    let chain = ChainClient::new(&net.net.nodes[0].rpc_url)?;
    // The second query was proven on node 1; node 0 may still be a block behind it.
    chain
        .wait_for_height(second.height + 2, std::time::Duration::from_secs(60))
        .await?;
    let trusted = fetch_light_block(&chain, trusted_at).await?;
    let mut forged = fetch_light_block(&chain, second.height + 1).await?;
    forged.signed_header.header.app_hash =
        tendermint::AppHash::try_from(vec![0xAB; 32]).map_err(|e| anyhow::anyhow!("{e}"))?;
    let now = tendermint::Time::from_unix_timestamp(
        i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)?
                .as_secs(),
        )?,
        0,
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let genuine = fetch_light_block(&chain, second.height + 1).await?;
    assert!(matches!(
        verify_from(&trusted, &genuine, now),
        Verdict::Success
    ));
    assert!(
        matches!(verify_from(&trusted, &forged, now), Verdict::Invalid(_)),
        "a forged app hash must fail verification"
    );

    // Pinning a header hash the node does not have fails.
    let mut pinned = LightClient::open(dir.path().join("pinned.json"))?;
    let wrong = Hash::Sha256([0x11; 32]).to_string();
    let err = pinned.trust(&chain, trusted_at, &wrong).await.unwrap_err();
    assert!(
        matches!(
            err.downcast_ref::<LightError>(),
            Some(LightError::PinMismatch { .. })
        ),
        "{err:#}"
    );
    assert_eq!(pinned.trusted_height(), None);

    // The CLI's --prove goes through the light client and keeps its trust in the home.
    let home = dir.path().join("cli-home");
    let out = run_json(&[
        "query",
        "bank",
        "balance",
        &alice.to_string(),
        "--prove",
        "--home",
        home.to_str().unwrap_or_default(),
        "--node",
        &net.net.nodes[0].rpc_url,
        "--output",
        "json",
    ])?;
    assert_eq!(out["balance"], "5000000");
    assert!(home.join("light").join("gpuchain-e2e.json").exists());
    Ok(())
}
