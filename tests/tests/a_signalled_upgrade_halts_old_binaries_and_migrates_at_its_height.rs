//! A planned upgrade on a 4-validator localnet, as operators run one: three validators
//! signal `memo-1k` from the CLI, which schedules it; no `gpuchaind` executes the block at
//! the height (those that receive it halt with a log line naming the upgrade, the others are
//! left waiting in consensus below it); the operators swap in the next release
//! (node/examples/gpuchaind_next.rs, which registers the migration) and restart; CometBFT
//! replays the halted block into it, the migration runs, all four nodes agree on the app
//! hash after it, and a transaction the old rules refused now commits. The old binary then
//! refuses to start on the upgraded state.

use std::process::Command;
use std::time::Duration;

use gpuchain_tests::{cli, example_path, gpuchaind_path, TestNet};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signalled_upgrade_halts_old_binaries_and_migrates_at_its_height() -> anyhow::Result<()> {
    let next = example_path("gpuchaind_next");
    anyhow::ensure!(
        next.exists(),
        "{} is missing: cargo build --workspace --all-targets",
        next.display()
    );
    let mut net = TestNet::start(4, &[("alice", 5_000_000)]).await?;
    let home = net.keys_home();
    let home = home.to_str().unwrap().to_string();
    let node = net.net.nodes[0].rpc_url.clone();
    let c0 = net.client(0)?;
    let run = |args: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--home", &home, "--node", &node]);
        cli(&all)
    };
    let long_memo = "m".repeat(600);
    let to = net.net.account("validator3")?.to_string();
    let send_with_memo = || {
        run(&[
            "tx", "bank", "send", "alice", &to, "1", "--memo", &long_memo,
        ])
    };
    let refused = send_with_memo()?;
    assert!(
        !refused.status.success(),
        "a 600-byte memo is refused before"
    );
    assert!(
        String::from_utf8_lossy(&refused.stdout).contains("memo"),
        "{}",
        String::from_utf8_lossy(&refused.stdout)
    );

    let plan_height = c0.latest_height().await? + 30;
    let plan_height_text = plan_height.to_string();
    for i in 0..3 {
        let from = format!("validator{i}");
        let out = run(&[
            "tx",
            "upgrade",
            "signal",
            &from,
            "--name",
            "memo-1k",
            "--height",
            &plan_height_text,
        ])?;
        assert!(
            out.status.success(),
            "signal from {from}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let status = run(&["query", "upgrade", "--output", "json"])?;
    let status: serde_json::Value = serde_json::from_slice(&status.stdout)?;
    assert_eq!(status["plan"]["name"], "memo-1k", "{status}");
    assert_eq!(status["plan"]["height"], plan_height);

    // No old binary executes the plan's block. A node that receives the block halts with a
    // line naming the upgrade; once those are gone, the rest may be left without enough
    // votes to commit the block, and wait in consensus with their state at the height
    // before. Either way the chain stops below the height.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let needed = format!("UPGRADE \"memo-1k\" NEEDED at height {plan_height}");
    let app_log = |net: &TestNet, i: usize| {
        std::fs::read_to_string(net.logs_dir().join(format!("node{i}-app.log"))).unwrap_or_default()
    };
    loop {
        let mut halted = 0;
        for i in 0..4 {
            if net.app_exited(i)? {
                assert!(
                    app_log(&net, i).contains(&needed),
                    "node {i}'s app died otherwise"
                );
                halted += 1;
            }
        }
        if halted > 0 {
            break;
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "no gpuchaind halted at the upgrade height"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    for i in 0..4 {
        if !net.app_exited(i)? {
            use tendermint_rpc::Client;
            let info = net.client(i)?.rpc().abci_info().await?;
            assert_eq!(
                info.last_block_height.value(),
                plan_height - 1,
                "node {i}'s app went past the height before the upgrade"
            );
        }
    }

    // The operators install the next release and start again.
    for i in 0..4 {
        net.kill_comet(i);
        net.kill_app(i);
    }
    for i in 0..4 {
        net.start_app_from(i, &next, &[])?;
    }
    for i in 0..4 {
        net.start_comet(i)?;
    }
    let c0 = net.client(0)?;
    c0.wait_for_height(plan_height + 3, Duration::from_secs(120))
        .await?;
    net.assert_same_app_hash(&[0, 1, 2, 3], plan_height + 1)
        .await?;
    let status = run(&["query", "upgrade", "--output", "json"])?;
    let status: serde_json::Value = serde_json::from_slice(&status.stdout)?;
    assert_eq!(status["plan"], serde_json::Value::Null);
    assert_eq!(status["applied"][0]["name"], "memo-1k");
    assert_eq!(status["applied"][0]["height"], plan_height);
    let sent = send_with_memo()?;
    assert!(
        sent.status.success(),
        "a 600-byte memo commits after the upgrade: {}",
        String::from_utf8_lossy(&sent.stdout)
    );

    // The old binary will not run on upgraded state.
    net.kill_comet(3);
    net.kill_app(3);
    let app_home = net.net.nodes[3].app_home.clone();
    let old = Command::new(gpuchaind_path())
        .args(["start", "--home"])
        .arg(&app_home)
        .output()?;
    assert!(!old.status.success());
    let stderr = String::from_utf8_lossy(&old.stderr);
    assert!(
        stderr.contains(&format!("upgraded by \"memo-1k\" at height {plan_height}")),
        "{stderr}"
    );
    Ok(())
}
