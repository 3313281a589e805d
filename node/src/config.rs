//! `app.toml`: where the ABCI server listens and where state lives.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;

use gpuchain_chain::app::EventIndex;

/// The app's configuration file. A misspelt key is an error, not silently a default.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppConfig {
    /// ABCI listen address, e.g. `127.0.0.1:26658`.
    pub abci_addr: String,
    /// State database directory, relative to the home directory.
    pub db_path: PathBuf,
    /// How many recent heights stay queryable and provable (`query … --height/--prove`);
    /// what only older heights can read is deleted at commit. `0` keeps every height (an
    /// archive node).
    #[serde(default = "default_proof_heights")]
    pub proof_heights: u64,
    /// Where `gpuchaind start` serves Prometheus metrics (`GET /metrics`), e.g.
    /// `127.0.0.1:26603`; absent: not served.
    #[serde(default)]
    pub metrics_listen: Option<String>,
    /// Take a state-sync snapshot every this many heights (0: none), in `<home>/snapshots`.
    #[serde(default = "default_snapshot_interval")]
    pub snapshot_interval: u64,
    /// How many snapshots to keep.
    #[serde(default = "default_snapshot_keep_recent")]
    pub snapshot_keep_recent: usize,
    /// Blocks CometBFT keeps behind the head; older ones are deleted (0: keep all). Keep
    /// at least the evidence age (`max_age_num_blocks` in genesis.json) on validators; blocks
    /// since the oldest kept snapshot are always kept, so joining nodes can follow on.
    #[serde(default)]
    pub min_retain_blocks: u64,
    /// Size a snapshot chunk is cut at, in bytes.
    #[serde(default = "default_snapshot_chunk_bytes")]
    pub snapshot_chunk_bytes: usize,
    /// The event attributes CometBFT's transaction indexer indexes for `tx_search` (event
    /// subscriptions see every attribute whatever this says): `"kind"` (every attribute of
    /// that event, e.g. `"bank.transfer"`) or `"kind.attribute"` (`"message.sender"`).
    /// Absent: [`DEFAULT_INDEX_EVENTS`]; `["*"]`: every attribute; `[]`: none, so the index
    /// keeps only what looking a transaction up by hash needs. Node-local: indexing is not
    /// part of consensus.
    #[serde(default)]
    pub index_events: Option<Vec<String>>,
}

/// What a node indexes unless app.toml says otherwise: each transaction's senders, the one
/// search clients make (an account's transactions). Every indexed attribute is a write to
/// CometBFT's index per transaction, kept for good: indexing all of them cost a validator
/// about a fifth of its throughput at the ceiling (docs/benchmarks.md).
pub const DEFAULT_INDEX_EVENTS: &[&str] = &["message.sender"];

fn default_snapshot_interval() -> u64 {
    1_000
}

fn default_snapshot_keep_recent() -> usize {
    2
}

fn default_snapshot_chunk_bytes() -> usize {
    4 << 20
}

fn default_proof_heights() -> u64 {
    gpuchain_chain::store::DEFAULT_PROOF_HEIGHTS
}

impl AppConfig {
    /// Reads `<home>/app.toml`.
    pub fn load(home: &Path) -> Result<AppConfig> {
        let path = home.join("app.toml");
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "reading {} (create a home with `gpuchaind testnet`)",
                path.display()
            )
        })?;
        toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))
    }

    /// The store's pruning window: `None` for an archive node.
    pub fn proof_window(&self) -> Option<u64> {
        (self.proof_heights > 0).then_some(self.proof_heights)
    }

    /// Where and how often snapshots are taken.
    pub fn snapshot_policy(&self, home: &Path) -> gpuchain_chain::store::snapshot::SnapshotPolicy {
        gpuchain_chain::store::snapshot::SnapshotPolicy {
            dir: home.join("snapshots"),
            interval: self.snapshot_interval,
            keep_recent: self.snapshot_keep_recent,
            chunk_bytes: self.snapshot_chunk_bytes.max(1),
        }
    }

    /// The attributes to index: `None` for all of them.
    pub fn event_index(&self) -> Option<EventIndex> {
        match &self.index_events {
            None => Some(EventIndex::new(
                DEFAULT_INDEX_EVENTS.iter().map(|n| n.to_string()),
            )),
            Some(names) if names.iter().any(|n| n == "*") => None,
            Some(names) => Some(EventIndex::new(names.iter().cloned())),
        }
    }

    /// Absolute database path.
    pub fn db_dir(&self, home: &Path) -> PathBuf {
        home.join(&self.db_path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_key_in_app_toml_is_an_error() {
        let good = "abci_addr = \"127.0.0.1:26658\"\ndb_path = \"data\"\n";
        let config: AppConfig = toml::from_str(good).unwrap();
        assert_eq!(
            config.proof_window(),
            Some(gpuchain_chain::store::DEFAULT_PROOF_HEIGHTS)
        );
        assert_eq!(
            config.event_index(),
            Some(EventIndex::new(["message.sender".to_string()])),
            "absent: an account's transactions can be searched, nothing else is indexed"
        );
        let all: AppConfig = toml::from_str(&format!("{good}index_events = [\"*\"]\n")).unwrap();
        assert_eq!(all.event_index(), None, "`*`: every attribute");
        let none: AppConfig = toml::from_str(&format!("{good}index_events = []\n")).unwrap();
        assert_eq!(
            none.event_index(),
            Some(EventIndex::new(Vec::<String>::new()))
        );
        let listed: AppConfig =
            toml::from_str(&format!("{good}index_events = [\"bank.transfer\"]\n")).unwrap();
        assert_eq!(
            listed.event_index(),
            Some(EventIndex::new(["bank.transfer".to_string()]))
        );
        let bad = format!("{good}proof_height = 0\n");
        let err = toml::from_str::<AppConfig>(&bad).unwrap_err().to_string();
        assert!(err.contains("unknown field `proof_height`"), "{err}");
    }
}
