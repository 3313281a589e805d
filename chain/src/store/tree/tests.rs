//! The batch update against the `jmt` crate itself: the same changes must give the same
//! root at every version, the crate must prove from the nodes written, and the node records
//! must be the crate's own bytes. Key hashes are chosen to share long prefixes so that
//! chains of single-child internal nodes form, and deletions collapse them again.

use std::collections::BTreeMap;

use gpuchain_types::Blake3Hasher;
use jmt::storage::{LeafNode as JmtLeaf, Node, NodeKey, TreeReader};
use jmt::{JellyfishMerkleTree, KeyHash, OwnedValue, Version};

use super::node::{NodeAddr, StoredNode};
use super::update::{apply_version, Change, NodeSource, Written};

/// Key hash `i`: random bytes under one of a few prefixes of 0 to 19 shared nibbles.
fn key(i: u64) -> [u8; 32] {
    let mut out = *blake3::hash(&i.to_le_bytes()).as_bytes();
    let shared = [0usize, 1, 3, 8, 19][(i % 5) as usize];
    for n in 0..shared {
        let byte = &mut out[n / 2];
        *byte = if n % 2 == 0 {
            *byte & 0x0f | 0xa0
        } else {
            *byte & 0xf0 | 0x05
        };
    }
    out
}

/// Version `v`'s writes over 120 keys: mostly upserts, some deletions of present and absent
/// keys; version 9 deletes every key, version 10 writes nothing, version 11 only deletes
/// keys that are absent.
fn changes(version: Version) -> BTreeMap<[u8; 32], Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    match version {
        9 => (0..120).for_each(|i| drop(out.insert(key(i), None))),
        10 => {}
        11 => (500..510).for_each(|i| drop(out.insert(key(i), None))),
        _ => {
            let r = blake3::hash(&version.to_le_bytes());
            for (j, b) in r.as_bytes().iter().enumerate() {
                let i = u64::from(*b) % 120;
                let value = (j % 4 != 0).then(|| vec![*b, version as u8, j as u8]);
                out.insert(key(i), value);
            }
        }
    }
    out
}

#[derive(Default)]
struct Nodes {
    written: Written,
    values: BTreeMap<([u8; 32], Version), Option<Vec<u8>>>,
}

impl NodeSource for BTreeMap<NodeAddr, StoredNode> {
    fn node(&self, addr: &NodeAddr) -> anyhow::Result<Option<StoredNode>> {
        Ok(self.get(addr).cloned())
    }
}

impl TreeReader for Nodes {
    fn get_node_option(&self, key: &NodeKey) -> anyhow::Result<Option<Node>> {
        let addr = NodeAddr::from_jmt(key).unwrap();
        self.written
            .nodes
            .get(&addr)
            .map(StoredNode::to_jmt)
            .transpose()
    }

    fn get_value_option(&self, max: Version, key: KeyHash) -> anyhow::Result<Option<OwnedValue>> {
        Ok(self
            .values
            .range((key.0, 0)..=(key.0, max))
            .next_back()
            .and_then(|(_, v)| v.clone()))
    }

    fn get_rightmost_leaf(&self) -> anyhow::Result<Option<(NodeKey, JmtLeaf)>> {
        Err(anyhow::anyhow!("these tests never restore a snapshot"))
    }
}

#[test]
fn batch_update_gives_the_jmt_roots_and_proofs_at_every_version() {
    let versions = 16;
    let empty = BTreeMap::new();
    let reference_store = Nodes::default();
    let reference = JellyfishMerkleTree::<_, Blake3Hasher>::new(&reference_store);
    let sets = (0..=versions).map(|v| {
        changes(v)
            .into_iter()
            .map(|(k, value)| (KeyHash(k), value))
            .collect::<Vec<_>>()
    });
    let (reference_roots, _) = reference.put_value_sets(sets, 0).unwrap();

    let mut nodes = Nodes::default();
    for version in 0..=versions {
        let batch: Vec<Change> = changes(version)
            .iter()
            .map(|(k, v)| (*k, v.as_ref().map(|v| *blake3::hash(v).as_bytes())))
            .collect();
        let base = version.checked_sub(1);
        let root = apply_version(&empty, &mut nodes.written, base, version, &batch)
            .unwrap()
            .root;
        assert_eq!(
            root, reference_roots[version as usize].0,
            "root at {version}"
        );
        for (k, v) in changes(version) {
            nodes.values.insert((k, version), v);
        }
    }

    let tree = JellyfishMerkleTree::<_, Blake3Hasher>::new(&nodes);
    for version in 0..=versions {
        for i in (0..130).step_by(7) {
            let (value, proof) = tree.get_with_proof(KeyHash(key(i)), version).unwrap();
            let expected = nodes.get_value_option(version, KeyHash(key(i))).unwrap();
            assert_eq!(value, expected, "key {i} at {version}");
            proof
                .verify(
                    reference_roots[version as usize],
                    KeyHash(key(i)),
                    value.as_deref(),
                )
                .unwrap_or_else(|e| panic!("key {i} at {version}: {e}"));
        }
    }
    // Version 9 emptied the tree: its root is the empty tree's.
    assert_eq!(
        nodes.written.nodes.get(&NodeAddr::root(9)),
        Some(&StoredNode::Null)
    );
}

#[test]
fn node_records_are_the_jmt_crates_own_bytes() {
    let mut nodes = Nodes::default();
    let batch: Vec<Change> = (0..40)
        .map(|i| (key(i), Some(*blake3::hash(&[i as u8]).as_bytes())))
        .collect::<BTreeMap<_, _>>()
        .into_iter()
        .collect();
    apply_version(&BTreeMap::new(), &mut nodes.written, None, 0, &batch).unwrap();
    let (mut internal, mut leaves) = (0, 0);
    for (addr, node) in &nodes.written.nodes {
        let bytes = borsh::to_vec(node).unwrap();
        let theirs: Node = borsh::from_slice(&bytes).unwrap();
        assert_eq!(borsh::to_vec(&theirs).unwrap(), bytes);
        let back: StoredNode = borsh::from_slice(&bytes).unwrap();
        assert_eq!(&back, node);
        match node {
            StoredNode::Internal(_) => internal += 1,
            StoredNode::Leaf(_) => leaves += 1,
            StoredNode::Null => {}
        }
        let key_bytes = borsh::to_vec(addr).unwrap();
        let their_key: NodeKey = borsh::from_slice(&key_bytes).unwrap();
        assert_eq!(borsh::to_vec(&their_key).unwrap(), key_bytes);
        assert_eq!(NodeAddr::from_jmt(&their_key), Some(*addr));
        assert_eq!(borsh::from_slice::<NodeAddr>(&key_bytes).unwrap(), *addr);
    }
    assert_eq!(leaves, 40);
    assert!(
        internal > 10,
        "prefix chains give many internal nodes: {internal}"
    );
}
