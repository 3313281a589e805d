//! The JMT's storage: nodes by borsh(NodeKey); values by `key_hash || version (big-endian)`
//! so that "newest value at or below version v" is one reverse seek.

use anyhow::{anyhow, Result};
use jmt::storage::{LeafNode, Node, NodeBatch, NodeKey, TreeReader};
use jmt::{KeyHash, OwnedValue, Version};
use rocksdb::{WriteBatch, DB};

use super::{cf, CF_NODES, CF_VALUES};

pub(super) struct TreeDb<'a>(pub(super) &'a DB);

fn value_key(key_hash: KeyHash, version: Version) -> [u8; 40] {
    let mut out = [0u8; 40];
    out[..32].copy_from_slice(&key_hash.0);
    out[32..].copy_from_slice(&version.to_be_bytes());
    out
}

/// A stored value: `0` for a deletion, `1 || bytes` for a value.
fn encode_value(value: &Option<OwnedValue>) -> Vec<u8> {
    match value {
        None => vec![0],
        Some(v) => {
            let mut out = Vec::with_capacity(v.len() + 1);
            out.push(1);
            out.extend_from_slice(v);
            out
        }
    }
}

pub(super) fn get_value_at(
    db: &DB,
    key_hash: KeyHash,
    max_version: Version,
) -> Result<Option<OwnedValue>> {
    let values = cf(db, CF_VALUES)?;
    let mut iter = db.raw_iterator_cf(values);
    iter.seek_for_prev(value_key(key_hash, max_version));
    iter.status()?;
    match (iter.key(), iter.value()) {
        (Some(k), Some(v)) if k.len() == 40 && k[..32] == key_hash.0 => match v.split_first() {
            Some((1, rest)) => Ok(Some(rest.to_vec())),
            Some((0, _)) => Ok(None),
            _ => Err(anyhow!("corrupt tree value encoding")),
        },
        _ => Ok(None),
    }
}

pub(super) fn write_tree_batch(db: &DB, batch: &mut WriteBatch, nodes: &NodeBatch) -> Result<()> {
    let node_cf = cf(db, CF_NODES)?;
    for (key, node) in nodes.nodes() {
        batch.put_cf(node_cf, borsh::to_vec(key)?, borsh::to_vec(node)?);
    }
    let value_cf = cf(db, CF_VALUES)?;
    for ((version, key_hash), value) in nodes.values() {
        batch.put_cf(
            value_cf,
            value_key(*key_hash, *version),
            encode_value(value),
        );
    }
    Ok(())
}

impl TreeReader for TreeDb<'_> {
    fn get_node_option(&self, node_key: &NodeKey) -> Result<Option<Node>> {
        let nodes = cf(self.0, CF_NODES)?;
        match self.0.get_cf(nodes, borsh::to_vec(node_key)?)? {
            Some(bytes) => Ok(Some(borsh::from_slice(&bytes)?)),
            None => Ok(None),
        }
    }

    fn get_value_option(
        &self,
        max_version: Version,
        key_hash: KeyHash,
    ) -> Result<Option<OwnedValue>> {
        get_value_at(self.0, key_hash, max_version)
    }

    fn get_rightmost_leaf(&self) -> Result<Option<(NodeKey, LeafNode)>> {
        // Only JMT's snapshot restore calls this; gpuchain nodes sync by block replay.
        Err(anyhow!(
            "state-sync restore is not supported: sync by replaying blocks"
        ))
    }
}
