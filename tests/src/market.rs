//! Market helpers for the fault-injection tests: digits inputs, digits jobs, orders open to
//! every provider or routed to one region, typed reads of an order's leases, a client
//! receiving its results (fetch, hash check, receipt), the supply, and the slash records
//! and their burns (through the CLI's JSON).

use anyhow::{Context, Result};
use gpuchain_auction::{ClassRequirement, Lease, MsgPostOrder, Requirements, TooFewBids};
use gpuchain_client::ChainClient;
use gpuchain_jobspec::{BlobRef, InferenceSpec, JobSpec, ModelArch};
use gpuchain_types::StateRead;

use crate::cli;

/// Writes `<dir>/attrs.json`, the hardware a CPU provider registered through the CLI
/// declares (`provider register --attrs`): no GPU, in `region`, an endpoint nothing serves.
pub fn cpu_provider_attrs(dir: &std::path::Path, region: &str) -> Result<std::path::PathBuf> {
    let path = dir.join("attrs.json");
    std::fs::write(
        &path,
        serde_json::json!({"class": "cpu", "gpu_model": "cpu", "vram_mib": 0, "gpu_count": 0,
            "compute_capability": 0, "driver_version": "none", "cuda_version": 0,
            "region": region, "endpoint_url": "http://127.0.0.1:9"})
        .to_string(),
    )?;
    Ok(path)
}

/// A GCT1 f32 tensor `[n, 64]` of pixel counts 0..=16, varied by `seed`.
pub fn digits_input(n: u32, seed: u32) -> Vec<u8> {
    let mut out = b"GCT1".to_vec();
    out.extend_from_slice(&[1, 2, 0, 0]);
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&64u32.to_le_bytes());
    for i in 0..n * 64 {
        out.extend_from_slice(&((((i + seed) * 7 + seed * 3) % 17) as f32).to_le_bytes());
    }
    out
}

/// The committed digits-MLP weights (`data/models/digits-mlp.safetensors`).
pub fn digits_mlp_weights() -> Result<Vec<u8>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/models/digits-mlp.safetensors");
    std::fs::read(&path).with_context(|| format!("reading {}", path.display()))
}

/// A digits-MLP inference job.
pub fn digits_job(weights: BlobRef, input: BlobRef) -> JobSpec {
    digits_job_of(ModelArch::DigitsMlp, weights, input)
}

/// A digits inference job of `arch` (the MLP or the CNN) over `input`, 64 rows a batch.
pub fn digits_job_of(arch: ModelArch, weights: BlobRef, input: BlobRef) -> JobSpec {
    JobSpec::Inference(InferenceSpec {
        arch,
        weights,
        tokenizer: None,
        input,
        batch_size: 64,
        llama: None,
        generation: None,
        tolerance: None,
    })
}

/// A CPU digits order whose blobs are never fetched, for tests whose providers act through
/// the CLI and commit and reveal hashes of the test's choosing; `region` routes it.
pub fn unfetched_digits_order(
    replicas: u32,
    region: Option<&str>,
    bid_window_blocks: u64,
    exec_deadline_blocks: u64,
) -> MsgPostOrder {
    let blob = BlobRef {
        blake3: [7; 32],
        size: 1_000,
        urls: vec!["http://127.0.0.1:9/blob/x".into()],
    };
    let weights = BlobRef {
        size: 40_000,
        ..blob.clone()
    };
    let mut order = open_order(digits_job(weights, blob), replicas, 1_000_000);
    order.requirements.class = ClassRequirement::Cpu;
    order.requirements.region = region.map(str::to_string);
    order.bid_window_blocks = bid_window_blocks;
    order.exec_deadline_blocks = exec_deadline_blocks;
    order
}

/// An order for `job`, `replicas` at up to `max_price` each, open to every provider (any
/// class, no hardware minimums, any region), with a 15-block bid window and 40 blocks to
/// execute, refunded if too few bid: tests change the fields they are about.
pub fn open_order(job: JobSpec, replicas: u32, max_price: u128) -> MsgPostOrder {
    MsgPostOrder {
        job,
        requirements: Requirements {
            class: ClassRequirement::Any,
            gpu_model: None,
            min_vram_mib: 0,
            min_gpu_count: 0,
            min_cuda_version: 0,
            region: None,
        },
        replicas,
        max_price_per_replica: max_price,
        bid_window_blocks: 15,
        exec_deadline_blocks: 40,
        on_too_few_bids: TooFewBids::Refund,
    }
}

/// An [`open_order`] that only providers registered in `region` can bid on.
pub fn routed_order(job: JobSpec, region: &str, replicas: u32, max_price: u128) -> MsgPostOrder {
    let mut order = open_order(job, replicas, max_price);
    order.requirements.region = Some(region.to_string());
    order
}

/// Every lease of an order, by id.
pub async fn order_leases(client: &ChainClient, order_id: u64) -> Result<Vec<Lease>> {
    let prefix = gpuchain_auction::state_key::leases_by_order_prefix(order_id);
    let snap = client.snapshot(&prefix).await?;
    let mut out = Vec::new();
    for (k, _) in snap.prefix_raw(&prefix) {
        if let Some(id) = k.rsplit('/').next().and_then(|s| s.parse::<u64>().ok()) {
            if let Some(l) = client
                .get::<Lease>(&gpuchain_auction::state_key::lease(id))
                .await?
            {
                out.push(l);
            }
        }
    }
    out.sort_by_key(|l| l.id);
    Ok(out)
}

/// What a client does with its results: waits up to `secs` for every one of `replicas`
/// leases of `order_id` to reveal, fetches each output from its provider's blob server
/// (blake3 checked against the revealed hash) and confirms the receipt on chain, so the
/// lease is paid without an availability check. Returns each lease's output bytes.
pub async fn receive(
    chain: &ChainClient,
    client: &ed25519_dalek::SigningKey,
    order_id: u64,
    replicas: usize,
    secs: u64,
) -> Result<Vec<Vec<u8>>> {
    use gpuchain_compute::blob::{fetch_output, FetchPolicy, OutputLimits};
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let leases = loop {
        let leases = order_leases(chain, order_id).await?;
        if leases.len() == replicas && leases.iter().all(|l| l.result_hash.is_some()) {
            break leases;
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "order {order_id} did not reveal in {secs} s: {leases:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    };
    let limits = OutputLimits {
        fetch_timeout: std::time::Duration::from_secs(30),
        max_output_bytes: 1 << 30,
        policy: FetchPolicy::any_host(),
    };
    let http = limits.policy.http_client()?;
    let mut outputs = Vec::new();
    for lease in leases {
        let hash = lease.result_hash.unwrap_or_default();
        let provider: gpuchain_staking::Provider = chain
            .get(&gpuchain_staking::state_key::provider(&lease.provider))
            .await?
            .ok_or_else(|| anyhow::anyhow!("provider {} is not registered", lease.provider))?;
        let bytes = fetch_output(&http, &provider.attrs.endpoint_url, &hash, &limits)
            .await
            .map_err(|e| anyhow::anyhow!("lease {}: {e}", lease.id))?;
        let confirm =
            gpuchain_auction::AuctionMsg::ConfirmReceipt(gpuchain_auction::MsgConfirmReceipt {
                lease_id: lease.id,
            });
        chain
            .submit(client, vec![gpuchain_tx::Msg::Auction(confirm)], "")
            .await?
            .ok()?;
        outputs.push(bytes);
    }
    Ok(outputs)
}

/// Total supply, ugpu.
pub async fn supply(client: &ChainClient) -> Result<u128> {
    Ok(client
        .get::<u128>(gpuchain_bank::state_key::supply())
        .await?
        .unwrap_or(0))
}

/// `gpuchaind query slashing records --output json`.
pub fn slash_records(node: &str) -> Result<Vec<serde_json::Value>> {
    let out = cli(&[
        "query", "slashing", "records", "--node", node, "--output", "json",
    ])?;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    Ok(v.as_array().cloned().unwrap_or_default())
}

/// The slash records (of [`slash_records`]) whose subject is `address`.
pub fn slashes_of<'a>(
    records: &'a [serde_json::Value],
    address: &str,
) -> Vec<&'a serde_json::Value> {
    records.iter().filter(|r| r["subject"] == address).collect()
}

/// Asserts that the supply fell from `before` by exactly what the slash records (of
/// [`slash_records`]) burned: nothing but slashes took ugpu out of it.
pub async fn assert_supply_moved_only_by_burns(
    chain: &ChainClient,
    before: u128,
    records: &[serde_json::Value],
) -> Result<()> {
    let burned: u128 = records
        .iter()
        .map(|r| amount(&r["outcome"]["burned"]))
        .sum();
    assert_eq!(
        before - supply(chain).await?,
        burned,
        "supply moved only by recorded burns"
    );
    Ok(())
}

/// A JSON amount (number or string) as u128.
pub fn amount(v: &serde_json::Value) -> u128 {
    v.as_u64()
        .map(u128::from)
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or(0)
}

/// A reference to `bytes` served at `url`.
pub fn blob(bytes: &[u8], url: String) -> BlobRef {
    BlobRef {
        blake3: *blake3::hash(bytes).as_bytes(),
        size: bytes.len() as u64,
        urls: vec![url],
    }
}

/// Polls `f` every 250 ms until it returns a value; panics naming `what` after `secs`.
pub async fn wait_for<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}
