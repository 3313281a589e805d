//! A localnet node's CometBFT config.toml: only what differs from CometBFT's defaults.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

/// Ports and peers of one node's config.toml.
pub(crate) struct NodeConfig<'a> {
    pub(crate) moniker: &'a str,
    pub(crate) p2p_port: u16,
    pub(crate) rpc_port: u16,
    pub(crate) abci_port: u16,
    pub(crate) persistent_peers: &'a str,
    pub(crate) timeout_commit_ms: u64,
    pub(crate) index_transactions: bool,
}

/// A config.toml holding only what differs from CometBFT's defaults.
pub(crate) fn write_config_toml(comet_home: &Path, c: &NodeConfig<'_>) -> Result<()> {
    let text = format!(
        r#"# Written by gpuchain's localnet builder; unset keys take CometBFT's defaults.
proxy_app = "tcp://127.0.0.1:{abci}"
moniker = "{moniker}"
log_level = "info"
db_backend = "goleveldb"

[rpc]
laddr = "tcp://127.0.0.1:{rpc}"
max_subscription_clients = 100
max_subscriptions_per_client = 20
timeout_broadcast_tx_commit = "30s"

[p2p]
laddr = "tcp://127.0.0.1:{p2p}"
external_address = "127.0.0.1:{p2p}"
persistent_peers = "{peers}"
addr_book_strict = false
allow_duplicate_ip = true
pex = false
flush_throttle_timeout = "10ms"

[mempool]
size = 50000
cache_size = 100000
max_txs_bytes = 268435456
recheck = true

[consensus]
timeout_propose = "1s"
timeout_propose_delta = "200ms"
timeout_prevote = "500ms"
timeout_precommit = "500ms"
timeout_commit = "{commit}ms"
skip_timeout_commit = false
create_empty_blocks = true
create_empty_blocks_interval = "0s"
peer_gossip_sleep_duration = "20ms"

[tx_index]
indexer = "{indexer}"

[instrumentation]
prometheus = false
"#,
        abci = c.abci_port,
        moniker = c.moniker,
        rpc = c.rpc_port,
        p2p = c.p2p_port,
        peers = c.persistent_peers,
        commit = c.timeout_commit_ms,
        indexer = if c.index_transactions { "kv" } else { "null" },
    );
    let path = comet_home.join("config").join("config.toml");
    fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn indexer(index_transactions: bool) -> String {
        let home = tempfile::tempdir().unwrap();
        fs::create_dir(home.path().join("config")).unwrap();
        let config = NodeConfig {
            moniker: "node0",
            p2p_port: 26656,
            rpc_port: 26657,
            abci_port: 26658,
            persistent_peers: "",
            timeout_commit_ms: 300,
            index_transactions,
        };
        write_config_toml(home.path(), &config).unwrap();
        let text = fs::read_to_string(home.path().join("config").join("config.toml")).unwrap();
        let parsed: toml::Value = toml::from_str(&text).unwrap();
        parsed["tx_index"]["indexer"].as_str().unwrap().to_string()
    }

    #[test]
    fn a_node_keeps_the_transaction_index_unless_told_not_to() {
        assert_eq!(indexer(true), "kv");
        assert_eq!(indexer(false), "null");
    }
}
