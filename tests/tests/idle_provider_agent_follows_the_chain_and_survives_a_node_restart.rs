//! An idle `gpuchain-provider` agent follows a real localnet block by block; when the node's
//! CometBFT is killed and restarted (its websocket drops), the agent reconnects and catches
//! up. Prints the idle agent's CPU share and resident memory for docs/benchmarks.md
//! (`GPUCHAIN_IDLE_SECS`, default 20, sets how long it idles).

use std::time::{Duration, Instant};

use gpuchain_tests::{AgentSpec, ProviderAgent, TestNet};

const GPU: u128 = 1_000_000;

fn cpu_ticks_and_rss(pid: u32) -> (u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, a)| a).unwrap_or("");
    let f: Vec<u64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss_kb = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0u64);
    (ticks, rss_kb * 1024)
}

async fn agent_height(agent: &ProviderAgent) -> u64 {
    agent
        .status()
        .ok()
        .and_then(|s| s["last_height"].as_u64())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_provider_agent_follows_the_chain_and_survives_a_node_restart() -> anyhow::Result<()> {
    let mut net = TestNet::start(1, &[("p1", 2_000 * GPU)]).await?;
    let chain = net.client(0)?;
    let dir = tempfile::tempdir()?;
    let spec = AgentSpec {
        cpu_price: 1_000,
        max_jobs: 1,
        ..AgentSpec::digits(&net, "p1", dir.path())
    };
    let agent = spec.start(&[])?;
    let pid = agent.pid().unwrap_or(0);
    tokio::time::sleep(Duration::from_secs(3)).await;

    let idle_secs: u64 = std::env::var("GPUCHAIN_IDLE_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let (t0, _) = cpu_ticks_and_rss(pid);
    let h0 = chain.latest_height().await?;
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(idle_secs)).await;
    let (t1, rss) = cpu_ticks_and_rss(pid);
    let wall = start.elapsed().as_secs_f64();
    let h1 = chain.latest_height().await?;
    let cpu_share = (t1 - t0) as f64 / 100.0 / wall;
    println!(
        "FIGURES idle agent over {wall:.0} s ({} blocks): CPU {:.2} % of one core, RSS {:.1} MiB",
        h1 - h0,
        cpu_share * 100.0,
        rss as f64 / (1u64 << 20) as f64
    );
    assert!(
        agent_height(&agent).await + 3 >= h1,
        "the agent keeps up with the chain"
    );
    assert!(cpu_share < 0.5, "an idle agent uses little CPU");

    // Drop the websocket: kill CometBFT, restart it; the agent reconnects and catches up.
    net.kill_comet(0);
    tokio::time::sleep(Duration::from_secs(2)).await;
    net.start_comet(0)?;
    let target = chain.latest_height().await.unwrap_or(h1) + 5;
    chain
        .wait_for_height(target, Duration::from_secs(60))
        .await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while agent_height(&agent).await < target {
        assert!(
            Instant::now() < deadline,
            "agent did not catch up after the node restart"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let log = agent.log_text();
    assert!(log.contains("websocket"), "the drop was noticed: {log}");
    Ok(())
}
