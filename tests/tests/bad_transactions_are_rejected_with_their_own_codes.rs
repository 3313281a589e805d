//! Bad input against a real node: each kind of bad transaction is refused with its own code,
//! codespace and a readable log, and no balance, nonce or supply changes.

use std::time::Duration;

use gpuchain_bank::{BankMsg, MsgMultiSend, MsgSend, Output};
use gpuchain_client::{keys::Keystore, ChainClient};
use gpuchain_tests::{cli, TestNet};
use gpuchain_tx::build_signed_tx;
use gpuchain_tx::{Msg, Tx};
use gpuchain_types::Address;

async fn expect_code(
    client: &ChainClient,
    tx_bytes: Vec<u8>,
    codespace: &str,
    code: u32,
    what: &str,
) {
    use tendermint_rpc::Client;
    let res = client
        .rpc()
        .broadcast_tx_sync(tx_bytes)
        .await
        .expect("broadcast");
    assert_eq!(
        (res.codespace.as_str(), res.code.value()),
        (codespace, code),
        "{what}: log {:?}",
        res.log
    );
    assert!(!res.log.is_empty(), "{what}: a readable log is required");
    let first_clause = res.log.split(':').next().unwrap_or_default();
    assert_eq!(
        res.log.matches(first_clause).count(),
        1,
        "{what}: the log repeats its prefix: {:?}",
        res.log
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_transactions_are_rejected_with_their_own_codes() -> anyhow::Result<()> {
    let net = TestNet::start(1, &[("alice", 1_000_000)]).await?;
    let client = net.client(0)?;
    let key = Keystore::open(&net.net.keys_dir)?.signing_key("alice", None)?;
    let alice = net.net.account("alice")?;
    let bob = Address([0xb0; 20]);
    let chain_id = client.chain_id().await?;
    let params = client.tx_params().await?;
    let send = |amount| vec![Msg::Bank(BankMsg::Send(MsgSend { to: bob, amount }))];

    // One good transfer so that nonce 0 is used.
    let good = build_signed_tx(&key, &chain_id, 0, &params, send(10), "");
    client
        .broadcast(&good, Duration::from_secs(30))
        .await?
        .ok()?;
    let supply_before: u128 = client
        .get(gpuchain_bank::state_key::supply())
        .await?
        .unwrap_or(0);
    let alice_before = client.balance(&alice).await?;

    expect_code(&client, vec![0xde, 0xad, 0xbe, 0xef], "tx", 1, "malformed").await;

    let mut forged = build_signed_tx(&key, &chain_id, 1, &params, send(10), "");
    forged.signature[0] ^= 1;
    expect_code(&client, forged.encode(), "tx", 3, "bad signature").await;

    let replay = build_signed_tx(&key, &chain_id, 0, &params, send(10), "replayed nonce");
    expect_code(&client, replay.encode(), "tx", 5, "replayed nonce").await;

    let overdraft = build_signed_tx(&key, &chain_id, 1, &params, send(10_000_000), "");
    expect_code(&client, overdraft.encode(), "bank", 1, "overdraft").await;

    let oversized = build_signed_tx(&key, &chain_id, 1, &params, send(1), &"x".repeat(70_000));
    expect_code(&client, oversized.encode(), "tx", 2, "oversized").await;

    let overflow = vec![Msg::Bank(BankMsg::MultiSend(MsgMultiSend {
        outputs: vec![
            Output {
                to: bob,
                amount: u128::MAX,
            },
            Output { to: bob, amount: 2 },
        ],
    }))];
    let overflow = build_signed_tx(&key, &chain_id, 1, &params, overflow, "");
    expect_code(&client, overflow.encode(), "bank", 2, "overflowing amount").await;

    let mut cheap = build_signed_tx(&key, &chain_id, 1, &params, send(1), "");
    cheap.body.fee = 0;
    let cheap = Tx::sign(cheap.body, &key);
    expect_code(&client, cheap.encode(), "tx", 6, "fee below minimum").await;

    // Wrong chain id, through the CLI: exit status 1 and the code in JSON.
    let home = net.keys_home();
    let out = cli(&[
        "tx",
        "bank",
        "send",
        "alice",
        &bob.to_string(),
        "5",
        "--chain-id",
        "another-chain",
        "--home",
        home.to_str().unwrap(),
        "--node",
        client.url(),
        "--output",
        "json",
    ])?;
    assert!(!out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(
        (v["codespace"].as_str(), v["code"].as_u64()),
        (Some("tx"), Some(4)),
        "{v}"
    );

    // Nothing changed: wait two blocks so anything that slipped into a block would show.
    let h = client.latest_height().await?;
    client
        .wait_for_height(h + 2, Duration::from_secs(30))
        .await?;
    assert_eq!(client.balance(&alice).await?, alice_before);
    assert_eq!(client.balance(&bob).await?, 10);
    assert_eq!(client.nonce(&alice).await?, 1);
    let supply_after: u128 = client
        .get(gpuchain_bank::state_key::supply())
        .await?
        .unwrap_or(0);
    assert_eq!(supply_after, supply_before);
    Ok(())
}
