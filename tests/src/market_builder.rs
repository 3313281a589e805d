//! One way to stand up a market on a localnet for end-to-end tests: verifiers and providers
//! registered through their own CLIs and run as real agent processes (a cast of providers
//! by role, honest or cheating), digits orders posted from a key of the net, the wait until
//! an order's leases are final, how each provider ended, and the agents' shutdown.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use gpuchain_auction::{AuctionMsg, Lease, MsgPostOrder};
use gpuchain_client::keys::Keystore;
use gpuchain_tx::Msg;

use crate::market::{
    blob, digits_input, digits_job, digits_mlp_weights, order_leases, routed_order,
};
use crate::net::TestNet;
use crate::ports::free_port_block;
use crate::provider::{AgentSpec, BlobHost, ProviderAgent};
use crate::verifier::{write_provider_config, VerifierAgent, VerifierSpec};

const GPU: u128 = 1_000_000;

/// One provider of a test's cast: its key, region and backend, and the kind of cheat it runs
/// (`--dishonest <kind>`), `None` if it is honest.
pub type ProviderRole = (
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
);

/// Prints how one provider of a cast ended: a `RESULT` line with its role, its lease's id
/// and state, and how many slash records name it.
pub fn print_result(role: ProviderRole, lease: &Lease, slashes: usize) {
    let (key, _, backend, cheat) = role;
    println!(
        "RESULT {key:>12} ({backend}, {}): lease {} {:?}, slashes {slashes}",
        cheat.unwrap_or("honest"),
        lease.id,
        lease.state
    );
}

/// Stops `verifier`, then `providers`, with SIGTERM, and asserts that the verifier exits
/// cleanly (a provider's exit is not checked).
pub fn terminate_agents(
    verifier: &mut VerifierAgent,
    providers: &mut [ProviderAgent],
) -> Result<()> {
    assert!(verifier.terminate()?, "verifier exits cleanly on SIGTERM");
    for p in providers {
        let _ = p.terminate();
    }
    Ok(())
}

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
        Ok(Market {
            net,
            dir: tempfile::tempdir()?,
            host: BlobHost::start()?,
            weights: digits_mlp_weights()?,
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
        VerifierAgent::register(&config)?;
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
        ProviderAgent::register(&config)?;
        ProviderAgent::spawn(&config, extra)
    }

    /// Runs [`Market::provider_on`] for each of `roles`, a cheat with `--dishonest <kind>`.
    pub fn providers(&self, roles: &[ProviderRole]) -> Result<Vec<ProviderAgent>> {
        roles
            .iter()
            .map(|&(key, region, backend, cheat)| {
                let extra: Vec<&str> = cheat.map(|k| vec!["--dishonest", k]).unwrap_or_default();
                self.provider_on(key, region, backend, &extra)
            })
            .collect()
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
