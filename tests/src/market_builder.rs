//! One way to stand up a market on a localnet for end-to-end tests: verifiers and providers
//! registered through their own CLIs and run as real agent processes, digits orders posted
//! from a key of the net, and the wait until an order's leases are final.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use gpuchain_auction::{AuctionMsg, Lease, MsgPostOrder};
use gpuchain_client::keys::Keystore;
use gpuchain_node::localnet::LocalnetSpec;
use gpuchain_tx::Msg;

use crate::market::{blob, digits_input, digits_job, order_leases, routed_order};
use crate::net::TestNet;
use crate::ports::free_port_block;
use crate::provider::{register_provider, AgentSpec, BlobHost, ProviderAgent};
use crate::verifier::{register_verifier, write_provider_config, VerifierAgent, VerifierSpec};

const GPU: u128 = 1_000_000;

/// Agents, their files and a blob host for one test's market; everything stops on drop.
pub struct Market<'a> {
    net: &'a TestNet,
    dir: tempfile::TempDir,
    host: BlobHost,
    weights: Vec<u8>,
}

impl<'a> Market<'a> {
    /// A market on `net` with the committed digits-MLP weights served by a blob host.
    pub fn new(net: &'a TestNet) -> Result<Market<'a>> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        Ok(Market {
            net,
            dir: tempfile::tempdir()?,
            host: BlobHost::start()?,
            weights: std::fs::read(root.join("data/models/digits-mlp.safetensors"))?,
        })
    }

    fn node(&self) -> String {
        self.net.net.nodes[0].rpc_url.clone()
    }

    /// Writes the config of a CPU verifier bonding `bond` with key `key` and registers it on
    /// chain, without running its agent (a test may answer for it by hand).
    pub fn register_verifier(&self, key: &str, bond: u128) -> Result<PathBuf> {
        let config = VerifierSpec {
            node: self.node(),
            keys_home: self.net.keys_home(),
            key: key.into(),
            dir: self.dir.path().join(key),
            metrics_port: free_port_block(1),
            backend: "cpu".into(),
            bond,
            challenge: String::new(),
        }
        .write_config()?;
        register_verifier(&config)?;
        Ok(config)
    }

    /// Registers a CPU verifier bonding 1,000 GPU and runs its agent.
    pub fn verifier(&self, key: &str) -> Result<VerifierAgent> {
        VerifierAgent::spawn(&self.register_verifier(key, 1_000 * GPU)?)
    }

    /// Registers a CPU provider for digits jobs in `region`, bonding 1,000 GPU, and runs its
    /// agent with `extra` arguments (e.g. `--dishonest wrong-model`).
    pub fn provider(&self, key: &str, region: &str, extra: &[&str]) -> Result<ProviderAgent> {
        self.provider_on(key, region, "cpu", extra)
    }

    /// [`Market::provider`] on `backend` (cpu, canonical, auto).
    pub fn provider_on(
        &self,
        key: &str,
        region: &str,
        backend: &str,
        extra: &[&str],
    ) -> Result<ProviderAgent> {
        let spec = AgentSpec::digits(self.net, key, self.dir.path());
        let config = write_provider_config(&spec, region, backend)?;
        register_provider(&config)?;
        ProviderAgent::spawn(&config, extra)
    }

    /// Posts, from `client`, a digits inference order of `replicas` at up to 1 GPU each for
    /// the providers of `region` (32 rows drawn with `seed`); returns its id.
    pub async fn post_digits_order(
        &self,
        client: &str,
        region: &str,
        replicas: u32,
        seed: u32,
    ) -> Result<u64> {
        self.post_digits_order_with(client, region, replicas, seed, |_| {})
            .await
    }

    /// [`Market::post_digits_order`] with the order changed by `edit` first; a refusal is
    /// the error.
    pub async fn post_digits_order_with(
        &self,
        client: &str,
        region: &str,
        replicas: u32,
        seed: u32,
        edit: impl FnOnce(&mut MsgPostOrder),
    ) -> Result<u64> {
        let w = blob(&self.weights, self.host.put("w", self.weights.clone()));
        let input = digits_input(32, seed);
        let x = blob(&input, self.host.put(&format!("x{seed}"), input.clone()));
        let key = Keystore::open(&self.net.net.keys_dir)?.signing_key(client, None)?;
        let mut order = routed_order(digits_job(w, x), region, replicas, GPU);
        edit(&mut order);
        let out = self
            .net
            .client(0)?
            .submit(&key, vec![Msg::Auction(AuctionMsg::PostOrder(order))], "")
            .await?
            .ok()?;
        out.event::<gpuchain_auction::OrderPostedEvent>()
            .map(|e| e.order_id)
            .context("the transaction posted no order")
    }

    /// Waits up to `secs` for `replicas` leases of `order_id` to be final; on timeout fails
    /// with the leases and `logs()` (the agents' logs worth reading).
    pub async fn settled(
        &self,
        order_id: u64,
        replicas: usize,
        secs: u64,
        logs: impl Fn() -> String,
    ) -> Result<Vec<Lease>> {
        let chain = self.net.client(0)?;
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let leases = order_leases(&chain, order_id).await?;
            if leases.len() == replicas && leases.iter().all(|l| l.state.is_final()) {
                return Ok(leases);
            }
            ensure!(
                Instant::now() < deadline,
                "order {order_id} not settled: {leases:?}\n{}",
                logs()
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
}

/// Chain parameters for a test of disputes with no audit draw (reputation and deterrence
/// floor off), short reveal and challenge windows and long verdict windows, so a slow CI
/// machine never takes a fallback.
pub fn disputes_only(spec: &mut LocalnetSpec) {
    let p = &mut spec.genesis.auction.params;
    p.reveal_window_blocks = 5;
    p.challenge_window_blocks = 3;
    p.verdict_window_blocks = 400;
    p.audit_min_ppm = 0;
    p.audit_max_ppm = 0;
    p.audit_deterrence_ppm = 0;
    let v = &mut spec.genesis.verify.params;
    v.verdict_deadline_blocks = 200;
    v.appeal_window_blocks = 2;
}
