//! `gpuchaind export` on a localnet with money in flight (a transfer, a bonded provider,
//! an open order holding escrow with a bid on it): a new chain started from the exported
//! genesis.json begins at the next height with the same balances, supply, provider, order
//! and bid, takes new transactions with the old nonces, and exporting its first height gives
//! the same file byte for byte. An exported state edited by hand is refused at InitChain.

use std::path::Path;
use std::time::Duration;

use gpuchain_tests::{cli, event_attr, unfetched_digits_order, NodeCli, TestNet};
use serde_json::Value;

const GPU: u128 = 1_000_000;

fn export(app_home: &Path, height: Option<u64>, output: &Path) -> anyhow::Result<Value> {
    let home = app_home.to_str().unwrap_or_default();
    let output = output.to_str().unwrap_or_default();
    let height = height.map(|h| h.to_string());
    let mut args = vec!["export", "--home", home, "--output-document", output];
    if let Some(h) = &height {
        args.extend(["--height", h]);
    }
    let out = cli(&args)?;
    anyhow::ensure!(
        out.status.success(),
        "export failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(serde_json::from_slice(&std::fs::read(output)?)?)
}

/// Wipes node 0's CometBFT and app data and installs `genesis` as its genesis.json.
fn reset_with_genesis(net: &TestNet, genesis: &Value) -> anyhow::Result<()> {
    let node = &net.net.nodes[0];
    let data = node.comet_home.join("data");
    std::fs::remove_dir_all(&data)?;
    std::fs::create_dir_all(&data)?;
    std::fs::write(
        data.join("priv_validator_state.json"),
        r#"{"height":"0","round":0,"step":0}"#,
    )?;
    std::fs::remove_dir_all(node.app_home.join("data"))?;
    std::fs::write(
        node.comet_home.join("config").join("genesis.json"),
        serde_json::to_vec_pretty(genesis)?,
    )?;
    Ok(())
}

struct Seen {
    balances: Vec<u128>,
    supply: Value,
    providers: Value,
    orders: Value,
    bids: Value,
}

async fn seen(net: &TestNet, cli: &NodeCli, order_id: &str) -> anyhow::Result<Seen> {
    let chain = net.client(0)?;
    let mut balances = Vec::new();
    for name in ["alice", "bob", "client", "provider"] {
        balances.push(chain.balance(&net.net.account(name)?).await?);
    }
    Ok(Seen {
        balances,
        supply: cli.query(&["bank", "supply"])?,
        providers: cli.query(&["staking", "providers"])?,
        orders: cli.query(&["auction", "orders"])?,
        bids: cli.query(&["auction", "bids", order_id])?,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exported_chain_restarts_from_its_state_and_exports_the_same() -> anyhow::Result<()> {
    let accounts = [
        ("alice", 1_000 * GPU),
        ("bob", 0),
        ("client", 1_000 * GPU),
        ("provider", 2_000 * GPU),
    ];
    let mut net = TestNet::start(1, &accounts).await?;
    let cli = NodeCli::new(&net, 0)?;
    let chain = net.client(0)?;
    let dir = tempfile::tempdir()?;

    let bob = net.net.account("bob")?.to_string();
    cli.tx(&["bank", "send", "alice", &bob, "5000000"])?;
    let attrs = gpuchain_tests::cpu_provider_attrs(dir.path(), "local")?;
    let bond = (1_000 * GPU).to_string();
    let attrs_path = attrs.to_str().unwrap_or_default();
    cli.tx(&[
        "provider", "register", "provider", "--attrs", attrs_path, "--bond", &bond,
    ])?;
    let order_file = dir.path().join("order.json");
    std::fs::write(
        &order_file,
        serde_json::to_vec(&unfetched_digits_order(1, None, 1_000, 1_000))?,
    )?;
    let order_path = order_file.to_str().unwrap_or_default();
    let posted = cli.tx(&["auction", "post-order", "client", "--order", order_path])?;
    let order_id = event_attr(&posted, "auction.order_posted", "order_id").unwrap_or_default();
    cli.tx(&["auction", "bid", "provider", &order_id, "900000"])?;

    let height = chain.latest_height().await?;
    chain
        .wait_for_height(height + 2, Duration::from_secs(30))
        .await?;
    let before = seen(&net, &cli, &order_id).await?;
    net.kill_comet(0);
    net.kill_app(0);

    let app_home = net.net.nodes[0].app_home.clone();
    let first = export(&app_home, None, &dir.path().join("first.json"))?;
    let exported_at = first["app_state"]["exported"]["height"]
        .as_u64()
        .unwrap_or_default();
    assert!(exported_at >= height + 2, "exported height {exported_at}");
    assert_eq!(first["initial_height"], (exported_at + 1).to_string());
    assert_eq!(first["chain_id"], net.net.chain_id);
    assert_eq!(
        first["validators"].as_array().map(Vec::len),
        Some(1),
        "{}",
        first["validators"]
    );
    // An older height the node still keeps exports too, and differs (blocks moved fees).
    let older = export(&app_home, Some(height - 1), &dir.path().join("older.json"))?;
    assert_eq!(older["initial_height"], height.to_string());
    assert_ne!(older["app_state"], first["app_state"]);

    reset_with_genesis(&net, &first)?;
    net.start_app(0, &[])?;
    net.start_comet(0)?;
    chain
        .wait_for_height(exported_at + 3, Duration::from_secs(60))
        .await?;
    let after = seen(&net, &cli, &order_id).await?;
    assert_eq!(
        after.balances[..3],
        before.balances[..3],
        "alice, bob, client"
    );
    assert_eq!(after.balances[3], before.balances[3], "provider");
    assert_eq!(after.supply, before.supply);
    assert_eq!(after.providers, before.providers);
    assert_eq!(after.orders, before.orders);
    assert_eq!(after.bids, before.bids);
    // The restarted chain takes new transactions, nonces carried over.
    cli.tx(&["bank", "send", "alice", &bob, "1000000"])?;
    assert_eq!(
        chain.balance(&net.net.account("bob")?).await?,
        before.balances[1] + 1_000_000
    );

    net.kill_comet(0);
    net.kill_app(0);
    let again = export(&app_home, Some(exported_at), &dir.path().join("again.json"))?;
    assert_eq!(
        std::fs::read(dir.path().join("again.json"))?,
        std::fs::read(dir.path().join("first.json"))?,
        "export → init → export must give the same file"
    );
    drop(again);

    // One balance changed by hand under the same chain id: InitChain refuses it.
    let mut edited = first.clone();
    let state = edited["app_state"]["exported"]["state"]
        .as_object_mut()
        .expect("state map");
    let key = state
        .keys()
        .find(|k| k.starts_with("bank/accounts/"))
        .cloned()
        .expect("an account");
    let value = state[&key].as_str().unwrap_or_default().to_string();
    let flipped = if value.starts_with('0') { "1" } else { "0" };
    state.insert(key, Value::String(format!("{flipped}{}", &value[1..])));
    reset_with_genesis(&net, &edited)?;
    net.start_app(0, &[])?;
    net.start_comet(0)?;
    assert!(
        net.wait_app_exit(0, Duration::from_secs(30))?,
        "the app accepted an edited export"
    );
    let log = std::fs::read_to_string(net.logs_dir().join("node0-app.log"))?;
    assert!(log.contains("the file was altered"), "{log}");
    Ok(())
}
