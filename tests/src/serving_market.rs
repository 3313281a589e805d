//! A serving market on a localnet for end-to-end tests: verifier agents that can audit
//! SmolLM2 answers, a provider agent that bids on SmolLM2 serving orders with its endpoint,
//! a serving order opened by the client (with the CLI, or by its gateway) and cleared to that
//! provider, the provider's `serve-model` on the lease and the client's gateway paying on
//! it. Every claim is audited.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use gpuchain_client::ChainClient;
use gpuchain_serving::{ServingLease, ServingRead};
use serde_json::Value;

use crate::net::{cli, TestNet};
use crate::ports::free_port_block;
use crate::provider::{AgentSpec, ProviderAgent};
use crate::serving::{gateway_logged, serve_model_on_leases, smollm2_path, Server};
use crate::verifier::{write_provider_config, VerifierAgent, VerifierSpec};

const GPU: u128 = 1_000_000;
/// The provider's bid, ugpu per million tokens.
pub const SERVING_PRICE: u64 = 400_000;
/// The client's deposit.
pub const SERVING_DEPOSIT: u128 = 50 * GPU;

/// Who opens the serving order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenedBy {
    /// The client, with `gpuchaind tx serving open`; the gateway is told the lease.
    Cli,
    /// The client's gateway (`--open`), which finds the lease and its endpoint on chain.
    Gateway,
    /// The gateway, for `blocks` blocks, renewing the order `renew_before` blocks before its
    /// leases end (`--renew-before-blocks`).
    GatewayRenewing {
        /// The order's length.
        blocks: u64,
        /// When its replacement is opened.
        renew_before: u64,
    },
}

/// What a market starts with beyond its verifiers, cheat and opener.
#[derive(Clone, Debug)]
pub struct MarketOptions {
    /// How many of the verifiers rubber-stamp (`--rubber-stamp`: `honest` on every audit,
    /// nothing run).
    pub rubber_stamps: usize,
    /// Accounts `spare0`, `spare1`, … funded at genesis, to become verifiers later
    /// ([`ServingMarket::add_verifier`]).
    pub spare_verifiers: usize,
    /// The chain's appeal window for serving verdicts.
    pub appeal_window_blocks: u64,
    /// More arguments for the client's gateway (e.g. `--ringers FILE`).
    pub gateway_args: Vec<String>,
}

impl Default for MarketOptions {
    fn default() -> Self {
        MarketOptions {
            rubber_stamps: 0,
            spare_verifiers: 0,
            appeal_window_blocks: 20,
            gateway_args: Vec::new(),
        }
    }
}

/// Everything of one serving market; processes stop on drop.
pub struct ServingMarket {
    /// The localnet.
    pub net: TestNet,
    /// Its node's RPC.
    pub node: String,
    /// The keys' home.
    pub home: String,
    /// A client of the node.
    pub chain: ChainClient,
    /// The lease the provider won.
    pub lease: ServingLease,
    /// The client's gateway.
    pub gateway: Server,
    /// The provider's endpoint.
    pub server: Server,
    verifiers: Vec<VerifierAgent>,
    provider: ProviderAgent,
    model_hash: String,
    /// Files of the agents and servers (logs, receipts).
    pub dir: tempfile::TempDir,
}

/// Appends `text` to the file at `path` (a config section).
pub(crate) fn append(path: &Path, text: &str) -> Result<()> {
    let mut all = std::fs::read_to_string(path)?;
    all.push('\n');
    all.push_str(text);
    std::fs::write(path, all)?;
    Ok(())
}

/// The address of key `name`.
pub fn key_address(home: &str, name: &str) -> Result<String> {
    let out = cli(&["keys", "show", name, "--home", home, "--output", "json"])?;
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout)?;
    Ok(v["address"].as_str().context("address")?.to_string())
}

/// Serving parameters under which every claim is audited, so the whole audit path runs: one
/// verifier judges alone (no second opinion), with windows that leave a loaded test machine
/// time to reveal and judge, a short claim grace, and standing verdicts open to appeal for
/// `appeal_window_blocks`.
pub(crate) fn audit_every_claim(
    p: &mut gpuchain_serving::ServingParams,
    appeal_window_blocks: u64,
) {
    p.audit_ppm = 1_000_000;
    p.second_opinion_ppm = 0;
    p.reveal_window_blocks = 100;
    p.verdict_window_blocks = 200;
    p.claim_grace_blocks = 10;
    p.appeal_window_blocks = appeal_window_blocks;
}

/// Writes a ringers file for the gateway: `question` asked greedily for at most `max_tokens`
/// tokens, with the answer SmolLM2 gives on this machine (`gpuchain-provider chat`, the same
/// runtime `serve-model` answers with).
pub fn smollm2_ringer(dir: &Path, question: &str, max_tokens: u32) -> Result<PathBuf> {
    let model = smollm2_path();
    let max = max_tokens.to_string();
    let model_arg = model.to_string_lossy().to_string();
    let out = ProviderAgent::cli(&[
        "chat",
        question,
        "--model",
        &model_arg,
        "--max-tokens",
        &max,
        "--backend",
        "cpu",
    ])?;
    ensure!(
        out.status.success(),
        "chat: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout)?;
    let answer = printed.strip_suffix('\n').unwrap_or(&printed);
    let line = serde_json::json!({
        "request": {"model": "smollm2", "max_tokens": max_tokens, "temperature": 0,
                    "messages": [{"role": "user", "content": question}]},
        "answer": answer,
    });
    let path = dir.join("ringers.jsonl");
    std::fs::write(&path, format!("{line}\n"))?;
    Ok(path)
}

/// The gateway's arguments to send the ringers of `file` every `every_s` seconds.
pub fn ringer_args(file: &Path, every_s: u64) -> Vec<String> {
    vec![
        "--ringers".into(),
        file.to_string_lossy().to_string(),
        "--ringer-every-s".into(),
        every_s.to_string(),
    ]
}

/// Writes a verifier's config that audits SmolLM2 answers, and registers it.
fn verifier_config(
    node: &str,
    keys: &Path,
    name: &str,
    dir: &Path,
    model: &Path,
    hash: &str,
) -> Result<PathBuf> {
    let config = VerifierSpec {
        node: node.to_string(),
        keys_home: keys.to_path_buf(),
        key: name.to_string(),
        dir: dir.join(name),
        metrics_port: free_port_block(1),
        backend: "cpu".into(),
        bond: 1_000 * GPU,
        challenge: String::new(),
    }
    .write_config()?;
    append(
        &config,
        &format!(
            "[serving]\n[[serving.models]]\nname = \"smollm2\"\nblake3 = \"{hash}\"\npath = \"{}\"\n",
            model.display()
        ),
    )?;
    VerifierAgent::register(&config)?;
    Ok(config)
}

/// The first serving lease on the chain, once there is one.
async fn first_lease(chain: &ChainClient) -> Result<ServingLease> {
    for _ in 0..150 {
        let state = chain
            .snapshot(gpuchain_serving::state_key::module_prefix())
            .await?;
        if let Some(l) = state.serving_leases().into_iter().next() {
            return Ok(l);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    anyhow::bail!("no lease: the provider agent did not win the order")
}

impl ServingMarket {
    /// Starts the market with `verifiers` verifier agents and a provider whose `serve-model`
    /// gets `serve_extra` arguments (e.g. a test-only cheat), the order opened `by`.
    pub async fn start(
        verifiers: usize,
        serve_extra: &[&str],
        by: OpenedBy,
    ) -> Result<ServingMarket> {
        ServingMarket::start_with(verifiers, serve_extra, by, MarketOptions::default()).await
    }

    /// [`ServingMarket::start`] with `options`.
    pub async fn start_with(
        verifiers: usize,
        serve_extra: &[&str],
        by: OpenedBy,
        options: MarketOptions,
    ) -> Result<ServingMarket> {
        let mut accounts = vec![("client", 1_000 * GPU), ("provider", 3_000 * GPU)];
        let names: Vec<String> = (0..verifiers).map(|i| format!("verifier{i}")).collect();
        let spares: Vec<String> = (0..options.spare_verifiers)
            .map(|i| format!("spare{i}"))
            .collect();
        accounts.extend(
            names
                .iter()
                .chain(&spares)
                .map(|n| (n.as_str(), 3_000 * GPU)),
        );
        let net = TestNet::start_with(1, &accounts, |spec| {
            audit_every_claim(
                &mut spec.genesis.serving.params,
                options.appeal_window_blocks,
            );
        })
        .await?;
        let node = net.net.nodes[0].rpc_url.clone();
        let keys = net.keys_home();
        let home = keys.to_string_lossy().to_string();
        let dir = tempfile::tempdir()?;
        let model = smollm2_path();
        let hash = blake3::hash(&std::fs::read(&model)?).to_hex().to_string();

        let mut agents = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let config = verifier_config(&node, &keys, name, dir.path(), &model, &hash)?;
            let extra: &[&str] = if i < options.rubber_stamps {
                &["--rubber-stamp"]
            } else {
                &[]
            };
            agents.push(VerifierAgent::spawn_with(&config, extra)?);
        }

        let receipts = dir.path().join("provider-receipts");
        let ports = free_port_block(3);
        let serve_port = ports + 2;
        let pconfig = write_provider_config(
            &AgentSpec {
                node: node.clone(),
                keys_home: keys.clone(),
                key: "provider".into(),
                dir: dir.path().join("provider"),
                blob_port: ports,
                metrics_port: ports + 1,
                cpu_price: 100_000,
                max_jobs: 1,
                archs: vec!["digits_mlp".into()],
                bond: 1_000 * GPU,
            },
            "local",
            "cpu",
        )?;
        append(
            &pconfig,
            &format!(
                "[serving]\nreceipts = \"{}\"\nendpoint = \"http://127.0.0.1:{serve_port}\"\n[[serving.models]]\nname = \"smollm2\"\nblake3 = \"{hash}\"\nprice = {SERVING_PRICE}\n",
                receipts.display()
            ),
        )?;
        ProviderAgent::register(&pconfig)?;
        let provider = ProviderAgent::spawn(&pconfig, &[])?;
        let provider_addr = key_address(&home, "provider")?;

        let client_receipts: PathBuf = dir.path().join("client-receipts");
        let receipts_arg = client_receipts.to_string_lossy().to_string();
        let mut client_args = vec![
            "--node",
            node.as_str(),
            "--home",
            home.as_str(),
            "--key",
            "client",
            "--receipts",
            receipts_arg.as_str(),
            "--ack-every",
            "2",
            "--ack-after-ms",
            "500",
        ];
        client_args.extend(options.gateway_args.iter().map(String::as_str));
        let chain = net.client(0)?;
        // The endpoint answers only requests on this provider's leases; it can start first.
        let server = serve_model_on_leases(
            serve_port,
            &receipts,
            &node,
            &provider_addr,
            serve_extra,
            &dir.path().join("serve.log"),
        )?;
        let (lease, gateway) = match by {
            OpenedBy::Cli => {
                let out = cli(&[
                    "tx",
                    "serving",
                    "open",
                    "client",
                    "--model",
                    "smollm2",
                    "--model-hash",
                    &hash,
                    "--providers",
                    "1",
                    "--max-price",
                    "1000000",
                    "--duration",
                    "2000",
                    "--bid-window",
                    "15",
                    "--deposit",
                    &SERVING_DEPOSIT.to_string(),
                    "--home",
                    &home,
                    "--node",
                    &node,
                    "--output",
                    "json",
                ])?;
                ensure!(
                    out.status.success(),
                    "open: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let lease = first_lease(&chain).await?;
                let upstream = format!("{},lease={}", server.url, lease.id);
                let gateway = gateway_logged(
                    &[upstream],
                    &client_args,
                    Some(&dir.path().join("gateway.log")),
                )?;
                (lease, gateway)
            }
            OpenedBy::Gateway | OpenedBy::GatewayRenewing { .. } => {
                let (blocks, renew_before) = match by {
                    OpenedBy::GatewayRenewing {
                        blocks,
                        renew_before,
                    } => (blocks, renew_before),
                    _ => (2000, 0),
                };
                let order = format!(
                    "model=smollm2,hash={hash},providers=1,max-price=1000000,blocks={blocks},\
                     bid-window=15,deposit={SERVING_DEPOSIT}"
                );
                let renew = renew_before.to_string();
                let mut args = client_args.to_vec();
                args.extend(["--open", order.as_str(), "--renew-before-blocks", &renew]);
                // It prints its address once the order has cleared and the lease is found.
                let gateway = gateway_logged(&[], &args, Some(&dir.path().join("gateway.log")))?;
                (first_lease(&chain).await?, gateway)
            }
        };
        ensure!(lease.provider.to_string() == provider_addr);
        ensure!(
            lease.endpoint == format!("http://127.0.0.1:{serve_port}"),
            "the lease keeps the endpoint the provider bid with: {}",
            lease.endpoint
        );
        Ok(ServingMarket {
            net,
            node,
            home,
            chain,
            lease,
            gateway,
            server,
            verifiers: agents,
            provider,
            model_hash: hash,
            dir,
        })
    }

    /// Registers the funded account `name` (a spare of [`MarketOptions`]) as a verifier that
    /// audits SmolLM2 answers and starts its agent.
    pub fn add_verifier(&mut self, name: &str) -> Result<()> {
        let config = verifier_config(
            &self.node,
            Path::new(&self.home),
            name,
            self.dir.path(),
            &smollm2_path(),
            &self.model_hash,
        )?;
        self.verifiers.push(VerifierAgent::spawn(&config)?);
        Ok(())
    }

    /// What the provider agent has logged so far.
    pub fn provider_log(&self) -> String {
        std::fs::read_to_string(&self.provider.log).unwrap_or_default()
    }

    /// Sends `body` to the gateway's `path`; the answer.
    pub async fn ask(&self, path: &str, body: &Value) -> Result<Value> {
        let bytes = reqwest::Client::new()
            .post(format!("{}{path}", self.gateway.url))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await?
            .error_for_status()?
            .bytes()
            .await?;
        Ok(serde_json::from_slice(&bytes)?)
    }

    /// The lease once `requests` request numbers are claimed and no claim of it is open.
    pub async fn settled(&self, requests: u64, secs: u64) -> Result<ServingLease> {
        for _ in 0..secs * 4 {
            let state = self
                .chain
                .snapshot(gpuchain_serving::state_key::module_prefix())
                .await?;
            let l = state.serving_lease(self.lease.id).context("the lease")?;
            let open = state
                .serving_claims()
                .iter()
                .any(|c| c.lease_id == self.lease.id);
            if l.next_seq >= requests && !open {
                return Ok(l);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        anyhow::bail!(
            "not every answer was claimed and settled within {secs} s (logs in {})",
            self.dir.path().display()
        )
    }

    /// The lease's order once it has closed (its claim grace over, the rest of its deposit
    /// back with the client) and every claim of its leases settled (a verdict may stand open
    /// to appeal past the close), and the serving escrow's balance then.
    pub async fn closed(&self, secs: u64) -> Result<(gpuchain_serving::ServingOrder, u128)> {
        for _ in 0..secs * 4 {
            let state = self
                .chain
                .snapshot(gpuchain_serving::state_key::module_prefix())
                .await?;
            let order = state
                .serving_order(self.lease.order_id)
                .context("the order")?;
            let open = state
                .serving_claims()
                .iter()
                .any(|c| order.leases.contains(&c.lease_id));
            if order.state == gpuchain_serving::ServingOrderState::Closed && !open {
                let escrow = self
                    .chain
                    .balance(&gpuchain_serving::module_account::serving_escrow())
                    .await?;
                return Ok((order, escrow));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        anyhow::bail!(
            "order {} did not close with every claim settled within {secs} s (logs in {})",
            self.lease.order_id,
            self.dir.path().display()
        )
    }
}
