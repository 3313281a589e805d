//! Writes a complete localnet: N validator homes on distinct 127.0.0.1 ports, one shared
//! genesis, funded accounts in a keystore, and a `localnet.json` summary that scripts and
//! tests read.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{ensure, Context, Result};
use ed25519_dalek::SigningKey;
use gpuchain_client::keys::Keystore;
use gpuchain_staking::GenesisValidator;
use gpuchain_types::{Address, Amount};
use rand_core::OsRng;
use serde::{Deserialize, Serialize};

use gpuchain_genesis::{genesis_json, genesis_validator, node_id, AppGenesis, CometKeys};

use crate::comet_config::{write_config_toml, NodeConfig};

/// Ports used by each node, from its base: p2p, rpc, abci, metrics.
pub const PORTS_PER_NODE: u16 = 4;

/// ugpu each localnet validator bonds at genesis (100 GPU: voting power 100).
pub const VALIDATOR_SELF_BOND: Amount = 100_000_000;
/// ugpu each localnet validator operator account starts with, bond included.
pub const VALIDATOR_ACCOUNT_FUNDS: Amount = 1_000_000_000;

/// What to build.
#[derive(Clone, Debug)]
pub struct LocalnetSpec {
    /// Directory to write into (created; must be empty or absent).
    pub dir: PathBuf,
    /// Number of validators.
    pub validators: usize,
    /// Chain id.
    pub chain_id: String,
    /// First port; node i uses `base_port + i * PORTS_PER_NODE ..`.
    pub base_port: u16,
    /// CometBFT's timeout_commit, which sets the block interval.
    pub timeout_commit_ms: u64,
    /// Named accounts created in the keystore and funded at genesis.
    pub accounts: Vec<(String, Amount)>,
    /// Full nodes beyond the validators (they may join later with create-validator).
    pub extra_nodes: usize,
    /// Genesis template: parameters set here are kept; balances and validators are added.
    pub genesis: AppGenesis,
    /// `proof_heights` written to every node's app.toml (0 = archive).
    pub proof_heights: u64,
    /// Every node's state-sync snapshots: interval in heights (0 = none), how many are
    /// kept, and the size chunks are cut at.
    pub snapshot_interval: u64,
    /// See `snapshot_interval`.
    pub snapshot_keep_recent: usize,
    /// See `snapshot_interval`.
    pub snapshot_chunk_bytes: usize,
    /// Blocks CometBFT keeps behind the head (0 = all).
    pub min_retain_blocks: u64,
    /// Event attributes CometBFT's indexer indexes (app.toml `index_events`); `None`: the
    /// app's default ([`crate::config::DEFAULT_INDEX_EVENTS`]).
    pub index_events: Option<Vec<String>>,
    /// Whether CometBFT keeps its transaction index (`[tx_index] indexer = "kv"`; `false`:
    /// `"null"`). Clients look their transactions up by hash (`/tx`), so a node they use
    /// needs it; a validator no client asks can go without, and skip its writes.
    pub index_transactions: bool,
}

impl LocalnetSpec {
    /// Defaults: 4 validators, `gpuchain-local`, ports from 26600, 300 ms blocks, and a
    /// `faucet` account with 10^9 GPU.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        LocalnetSpec {
            dir: dir.into(),
            validators: 4,
            chain_id: "gpuchain-local".into(),
            base_port: 26600,
            timeout_commit_ms: 300,
            accounts: vec![("faucet".into(), 1_000_000_000_000_000)],
            extra_nodes: 0,
            genesis: AppGenesis::default(),
            proof_heights: 1_000,
            snapshot_interval: 1_000,
            snapshot_keep_recent: 2,
            snapshot_chunk_bytes: 4 << 20,
            min_retain_blocks: 0,
            index_events: None,
            index_transactions: true,
        }
    }
}

/// One node of a built localnet.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LocalnetNode {
    /// `node0`, `node1`, …
    pub moniker: String,
    /// CometBFT home.
    pub comet_home: PathBuf,
    /// gpuchaind home (app.toml, state database).
    pub app_home: PathBuf,
    /// CometBFT RPC, `http://127.0.0.1:<port>`.
    pub rpc_url: String,
    /// ABCI listen address, `127.0.0.1:<port>`.
    pub abci_addr: String,
    /// P2P port.
    pub p2p_port: u16,
    /// Where the app serves Prometheus metrics, `127.0.0.1:<port>`.
    #[serde(default)]
    pub metrics_addr: String,
}

/// A built localnet, as recorded in `<dir>/localnet.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Localnet {
    /// Chain id.
    pub chain_id: String,
    /// Keystore holding the funded accounts.
    pub keys_dir: PathBuf,
    /// Nodes in order.
    pub nodes: Vec<LocalnetNode>,
}

impl Localnet {
    /// Reads `<dir>/localnet.json`.
    pub fn load(dir: &Path) -> Result<Localnet> {
        let path = dir.join("localnet.json");
        let bytes = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        Ok(serde_json::from_slice(&bytes)?)
    }

    /// Writes every file of the localnet described by `spec`.
    pub fn build(spec: &LocalnetSpec) -> Result<Localnet> {
        ensure!(
            spec.validators >= 1,
            "a localnet needs at least one validator"
        );
        let port_span =
            u16::try_from(spec.validators + spec.extra_nodes)?.saturating_mul(PORTS_PER_NODE);
        ensure!(
            spec.base_port.checked_add(port_span).is_some(),
            "ports run past 65535"
        );
        if spec.dir.exists() {
            ensure!(
                fs::read_dir(&spec.dir)?.next().is_none(),
                "{} is not empty; remove it or pick another directory",
                spec.dir.display()
            );
        }
        fs::create_dir_all(&spec.dir)?;
        let keys_dir = spec.dir.join("keys");
        let keystore = Keystore::open(&keys_dir)?;

        let mut genesis = spec.genesis.clone();
        for (name, amount) in &spec.accounts {
            let info = keystore.create(name, None)?;
            genesis.bank.balances.push((info.address, *amount));
        }

        let total_nodes = spec.validators + spec.extra_nodes;
        let comet_keys: Vec<CometKeys> = (0..total_nodes)
            .map(|_| CometKeys {
                validator: SigningKey::generate(&mut OsRng),
                node: SigningKey::generate(&mut OsRng),
            })
            .collect();
        let ports = |i: usize, k: u16| spec.base_port + (i as u16) * PORTS_PER_NODE + k;
        // Each validator has an operator account that bonds VALIDATOR_SELF_BOND at genesis.
        let power = VALIDATOR_SELF_BOND / genesis.staking.params.power_reduction.max(1);
        let mut validators = Vec::new();
        for (i, k) in comet_keys.iter().enumerate().take(spec.validators) {
            let operator = keystore.create(&format!("validator{i}"), None)?.address;
            genesis
                .bank
                .balances
                .push((operator, VALIDATOR_ACCOUNT_FUNDS));
            genesis.staking.validators.push(GenesisValidator {
                operator,
                consensus_pubkey: k.validator.verifying_key().to_bytes(),
                moniker: format!("node{i}"),
                self_bond: VALIDATOR_SELF_BOND,
            });
            validators.push(genesis_validator(
                &k.validator,
                u64::try_from(power)?,
                &format!("node{i}"),
            ));
        }
        let genesis_doc = genesis_json(&spec.chain_id, validators, &genesis)?;

        let mut nodes = Vec::new();
        for (i, keys) in comet_keys.iter().enumerate() {
            let moniker = format!("node{i}");
            let node_dir = spec.dir.join(&moniker);
            let comet_home = node_dir.join("cometbft");
            let app_home = node_dir.join("app");
            keys.write(&comet_home)?;
            let peers: Vec<String> = comet_keys
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(j, k)| format!("{}@127.0.0.1:{}", node_id(&k.node), ports(j, 0)))
                .collect();
            write_config_toml(
                &comet_home,
                &NodeConfig {
                    moniker: &moniker,
                    p2p_port: ports(i, 0),
                    rpc_port: ports(i, 1),
                    abci_port: ports(i, 2),
                    persistent_peers: &peers.join(","),
                    timeout_commit_ms: spec.timeout_commit_ms,
                    index_transactions: spec.index_transactions,
                },
            )?;
            fs::write(
                comet_home.join("config").join("genesis.json"),
                serde_json::to_vec_pretty(&genesis_doc)?,
            )?;
            let abci_addr = format!("127.0.0.1:{}", ports(i, 2));
            let metrics_addr = format!("127.0.0.1:{}", ports(i, 3));
            fs::create_dir_all(&app_home)?;
            fs::write(
                app_home.join("app.toml"),
                format!(
                    "abci_addr = \"{abci_addr}\"\ndb_path = \"data\"\n\
                     # Heights whose state stays queryable and provable; older state is pruned. 0 = archive.\n\
                     proof_heights = {}\n\
                     # Prometheus metrics of the app (GET /metrics).\n\
                     metrics_listen = \"{metrics_addr}\"\n\
                     # State-sync snapshots (in snapshots/) for nodes that join later: every\n\
                     # this many heights (0 = none), how many are kept, chunk size in bytes.\n\
                     snapshot_interval = {}\n\
                     snapshot_keep_recent = {}\n\
                     snapshot_chunk_bytes = {}\n\
                     # Blocks CometBFT keeps behind the head (0 = all).\n\
                     min_retain_blocks = {}\n{}",
                    spec.proof_heights,
                    spec.snapshot_interval,
                    spec.snapshot_keep_recent,
                    spec.snapshot_chunk_bytes,
                    spec.min_retain_blocks,
                    index_events_line(spec.index_events.as_deref()),
                ),
            )?;
            nodes.push(LocalnetNode {
                moniker,
                comet_home,
                app_home,
                rpc_url: format!("http://127.0.0.1:{}", ports(i, 1)),
                abci_addr,
                p2p_port: ports(i, 0),
                metrics_addr,
            });
        }
        let net = Localnet {
            chain_id: spec.chain_id.clone(),
            keys_dir,
            nodes,
        };
        fs::write(
            spec.dir.join("localnet.json"),
            serde_json::to_vec_pretty(&net)?,
        )?;
        Ok(net)
    }

    /// Address of a named account in the localnet's keystore.
    pub fn account(&self, name: &str) -> Result<Address> {
        Ok(Keystore::open(&self.keys_dir)?.show(name)?.address)
    }
}

/// The app.toml line choosing what CometBFT indexes; nothing when every attribute is.
fn index_events_line(events: Option<&[String]>) -> String {
    match events {
        None => String::new(),
        Some(events) => format!(
            "# Event attributes CometBFT's transaction indexer indexes ([] = none).\n\
             index_events = {}\n",
            serde_json::to_string(events).unwrap_or_else(|_| "[]".into())
        ),
    }
}
