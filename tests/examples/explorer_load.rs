//! The explorer with a large market in state: a 1-validator localnet whose genesis registers
//! 1,000 GPU providers (five GPU models, 1–8 GPUs, six regions), then 10,000 orders posted by
//! 32 clients (32 orders per transaction, long bid windows so they stay open). Then
//! `gpuchain-explorer` starts and the figures are taken: the time to rebuild its read model
//! from the chain, its resident memory, and the first contentful paint of the providers and
//! market pages in headless Chromium (tests/explorer_load.py: fresh page each time, the two
//! pages alternated, median and spread), with the machine's load average beside them.
//!
//! `cargo run --example explorer_load [PROVIDERS ORDERS]` (after `cargo build --workspace`
//! and `scripts/browser-env.sh`); `EXPLORER_LOAD_SCREENSHOTS=DIR` saves pictures of the two
//! pages there, `EXPLORER_LOAD_HOLD=SECONDS` keeps the market up afterwards.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use gpuchain_auction::{ClassRequirement, MsgPostOrder, Requirements, TooFewBids};
use gpuchain_client::keys::Keystore;
use gpuchain_jobspec::{BlobRef, InferenceSpec, JobSpec, ModelArch};
use gpuchain_staking::{GenesisProvider, ProviderAttrs, ProviderClass};
use gpuchain_tests::demo::ExplorerProcess;
use gpuchain_tests::{free_port_block, TestNet};
use gpuchain_tx::Msg;
use gpuchain_types::Address;

const GPU: u128 = 1_000_000;
const CLIENTS: usize = 32;
const PER_TX: usize = 32;
const MODELS: [(&str, u64, u32); 5] = [
    ("NVIDIA H200", 143_771, 90),
    ("NVIDIA H100 80GB HBM3", 81_559, 90),
    ("NVIDIA A100-SXM4-80GB", 81_920, 80),
    ("NVIDIA L40S", 46_068, 89),
    ("NVIDIA GeForce RTX 4090", 24_564, 89),
];
const REGIONS: [&str; 6] = [
    "eu-west", "eu-north", "us-east", "us-west", "ap-south", "ap-east",
];

fn provider(i: usize) -> GenesisProvider {
    let (model, vram, cc) = MODELS[i % MODELS.len()];
    let operator = Address(
        blake3::hash(format!("load-provider-{i}").as_bytes()).as_bytes()[..20]
            .try_into()
            .unwrap_or([0; 20]),
    );
    GenesisProvider {
        operator,
        attrs: ProviderAttrs {
            class: ProviderClass::Gpu,
            gpu_model: model.into(),
            vram_mib: vram,
            gpu_count: 1 << (i % 4),
            compute_capability: cc,
            driver_version: "550.54.15".into(),
            cuda_version: 12_040,
            region: REGIONS[i % REGIONS.len()].into(),
            endpoint_url: format!("https://p{i}.example.org"),
        },
        bond: (1_000 + (i as u128 % 50) * 10) * GPU,
    }
}

fn order(i: usize) -> MsgPostOrder {
    let blob = |size| BlobRef {
        blake3: *blake3::hash(format!("blob-{i}-{size}").as_bytes()).as_bytes(),
        size,
        urls: vec![format!("https://data.example.org/{i}/{size}")],
    };
    MsgPostOrder {
        job: JobSpec::Inference(InferenceSpec {
            arch: ModelArch::DigitsMlp,
            weights: blob(40_000),
            tokenizer: None,
            input: blob(1_000 + i as u64),
            batch_size: 64,
            llama: None,
            generation: None,
            tolerance: None,
        }),
        requirements: Requirements {
            class: ClassRequirement::Gpu,
            gpu_model: None,
            min_vram_mib: 1_000_000,
            min_gpu_count: 1,
            min_cuda_version: 0,
            region: None,
        },
        replicas: 1,
        max_price_per_replica: GPU / 2 + i as u128,
        bid_window_blocks: 500_000,
        exec_deadline_blocks: 100,
        on_too_few_bids: TooFewBids::Refund,
    }
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let providers = args.first().copied().unwrap_or(1_000);
    let orders = args.get(1).copied().unwrap_or(10_000);
    let names: Vec<String> = (0..CLIENTS).map(|c| format!("c{c}")).collect();
    let accounts: Vec<(&str, u128)> = names
        .iter()
        .map(|n| (n.as_str(), 1_000_000 * GPU))
        .collect();
    let net = TestNet::start_with(1, &accounts, |spec| {
        spec.genesis.auction.params.max_bid_window_blocks = 1_000_000;
        for i in 0..providers {
            let p = provider(i);
            spec.genesis
                .bank
                .balances
                .push((p.operator, p.bond + 10 * GPU));
            spec.genesis.staking.providers.push(p);
        }
    })
    .await?;
    let client = net.client(0)?;
    let keys = Keystore::open(&net.net.keys_dir)?;
    println!("{providers} providers at genesis; posting {orders} orders from {CLIENTS} clients");
    let started = Instant::now();
    let txs_total = orders.div_ceil(PER_TX);
    let mut tasks = Vec::new();
    for (c, name) in names.iter().enumerate() {
        let key = keys.signing_key(name, None)?;
        let client = client.clone();
        let mine: Vec<usize> = (0..txs_total).filter(|t| t % CLIENTS == c).collect();
        tasks.push(tokio::spawn(async move {
            for t in mine {
                let msgs: Vec<Msg> = (t * PER_TX..((t + 1) * PER_TX).min(orders))
                    .map(|i| Msg::Auction(gpuchain_auction::AuctionMsg::PostOrder(order(i))))
                    .collect();
                client.submit(&key, msgs, "load").await?.ok()?;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    let height = client.latest_height().await?;
    println!(
        "{orders} orders in state at height {height} after {:.0} s",
        started.elapsed().as_secs_f64()
    );

    let port = free_port_block(1);
    let dir = net.dir().join("explorer");
    let started = Instant::now();
    let explorer = ExplorerProcess::start(&net.net.nodes[0].rpc_url, port, &dir).await?;
    let http = reqwest::Client::new();
    let rebuild_ms = loop {
        let status: serde_json::Value = serde_json::from_slice(
            &http
                .get(format!("{}/status", explorer.url))
                .header("accept", "application/json")
                .send()
                .await?
                .bytes()
                .await?,
        )?;
        if let Some(ms) = status["progress"]["rebuild_ms"].as_u64() {
            break ms;
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(900),
            "no rebuild in 15 min"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // One page load first, so the state snapshot of this height is in memory as it is for
    // every visitor after the first.
    http.get(format!("{}/market", explorer.url)).send().await?;
    let rss_before = rss_kib(explorer.pid());
    let python = std::process::Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scripts/browser-env.sh"
        ))
        .output()?;
    let python = String::from_utf8(python.stdout)?.trim().to_string();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let out = std::process::Command::new(&python)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/explorer_load.py"))
        .arg(&explorer.url)
        .args(std::env::var("EXPLORER_LOAD_SCREENSHOTS").ok())
        .output()
        .context("running tests/explorer_load.py")?;
    anyhow::ensure!(
        out.status.success(),
        "explorer_load.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let load_after = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("read model rebuilt from {height} blocks in {rebuild_ms} ms");
    println!(
        "explorer resident memory: {} MiB after the first page, {} MiB after the page loads",
        rss_before / 1024,
        rss_kib(explorer.pid()) / 1024
    );
    print!("{}", String::from_utf8_lossy(&out.stdout));
    println!(
        "load average before: {}   after: {}",
        load.trim(),
        load_after.trim()
    );
    if let Some(secs) = std::env::var("EXPLORER_LOAD_HOLD")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        println!("holding the market for {secs} s: {}", explorer.url);
        tokio::time::sleep(Duration::from_secs(secs)).await;
    }
    Ok(())
}
