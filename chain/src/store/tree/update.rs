//! One tree version from a sorted batch of changes: the batch walks down the previous
//! version once, splitting by nibble, and each touched node is rebuilt and hashed once on
//! the way back up. The result is the JMT's canonical shape for the new key set (a leaf sits
//! at the shallowest position no other key shares; an internal node with a single leaf
//! under it collapses into that leaf), so the root equals the one the `jmt` crate computes
//! for the same writes, and its proofs read these nodes unchanged.

use std::collections::BTreeMap;

use anyhow::{anyhow, Result};
use jmt::Version;

use super::node::{
    nibble, Child, ChildKind, InternalNode, LeafNode, NibblePath, NodeAddr, StoredNode,
    PLACEHOLDER_HASH,
};

/// A key hash and its new value hash (`None` deletes the key).
pub(crate) type Change = ([u8; 32], Option<[u8; 32]>);

/// Where the update reads the previous version's nodes.
pub(crate) trait NodeSource {
    fn node(&self, addr: &NodeAddr) -> Result<Option<StoredNode>>;
}

/// What became of a subtree.
enum Subtree {
    /// Nothing in it changed: the parent keeps its reference.
    Unchanged,
    /// Its last key was deleted.
    Empty,
    /// A single leaf, not yet written: the parent places it, or passes it further up when
    /// the leaf turns out to be the only thing left under the parent too.
    Leaf(LeafNode),
    /// An internal node, written at the new version.
    Internal(Child),
}

/// The nodes and stale-node records of the versions built so far.
#[derive(Default)]
pub(crate) struct Written {
    pub(crate) nodes: BTreeMap<NodeAddr, StoredNode>,
    /// Per version (ascending), the nodes it replaced.
    pub(crate) stale: Vec<(Version, Vec<NodeAddr>)>,
}

/// What building one version produced besides its nodes.
pub(crate) struct VersionOutcome {
    pub(crate) root: [u8; 32],
    /// For every leaf of the previous version that this version replaced or moved (rewrote
    /// at another position), the version that had written it. A leaf's version is the
    /// version of its key's newest value record (moves copy the value), so these are the
    /// value records this version makes prunable.
    pub(crate) old_leaves: BTreeMap<[u8; 32], Version>,
}

/// Builds version `version` from `base` (the previous version, `None` for an empty tree)
/// and `changes` (sorted by key hash, one entry per key).
pub(crate) fn apply_version(
    source: &impl NodeSource,
    written: &mut Written,
    base: Option<Version>,
    version: Version,
    changes: &[Change],
) -> Result<VersionOutcome> {
    let mut update = VersionUpdate {
        source,
        written,
        version,
        stale: Vec::new(),
        old_leaves: BTreeMap::new(),
    };
    let root = match base {
        Some(base) => {
            let addr = NodeAddr::root(base);
            update.read(&addr)?.map(|node| (addr, node))
        }
        None => None,
    };
    let subtree = update.update(NibblePath::ROOT, root.clone(), changes)?;
    let (node, hash) = match subtree {
        Subtree::Internal(child) => (None, child.hash),
        Subtree::Leaf(leaf) => (Some(StoredNode::Leaf(leaf)), leaf.hash()),
        Subtree::Empty => (Some(StoredNode::Null), PLACEHOLDER_HASH),
        Subtree::Unchanged => {
            // Every version has a root: copy the previous one.
            let node = match root {
                Some((addr, node)) => {
                    update.stale.push(addr);
                    if let StoredNode::Leaf(leaf) = &node {
                        update.old_leaves.insert(leaf.key_hash, addr.version);
                    }
                    node
                }
                None => StoredNode::Null,
            };
            let hash = node.hash();
            (Some(node), hash)
        }
    };
    if let Some(node) = node {
        update.write(NibblePath::ROOT, node);
    }
    let stale = std::mem::take(&mut update.stale);
    let old_leaves = std::mem::take(&mut update.old_leaves);
    written.stale.push((version, stale));
    Ok(VersionOutcome {
        root: hash,
        old_leaves,
    })
}

struct VersionUpdate<'a, S> {
    source: &'a S,
    written: &'a mut Written,
    version: Version,
    stale: Vec<NodeAddr>,
    old_leaves: BTreeMap<[u8; 32], Version>,
}

impl<S: NodeSource> VersionUpdate<'_, S> {
    /// Earlier versions of this batch first, then the committed tree.
    fn read(&self, addr: &NodeAddr) -> Result<Option<StoredNode>> {
        match self.written.nodes.get(addr) {
            Some(node) => Ok(Some(node.clone())),
            None => self.source.node(addr),
        }
    }

    fn write(&mut self, path: NibblePath, node: StoredNode) {
        let addr = NodeAddr {
            version: self.version,
            path,
        };
        self.written.nodes.insert(addr, node);
    }

    fn update(
        &mut self,
        path: NibblePath,
        existing: Option<(NodeAddr, StoredNode)>,
        changes: &[Change],
    ) -> Result<Subtree> {
        match existing {
            None | Some((_, StoredNode::Null)) => {
                let leaves: Vec<LeafNode> = changes.iter().filter_map(leaf_of).collect();
                if leaves.is_empty() {
                    return Ok(Subtree::Unchanged);
                }
                if let Some((addr, _)) = existing {
                    self.stale.push(addr);
                }
                self.build(path, &leaves)
            }
            Some((addr, StoredNode::Leaf(old))) => {
                let touched = changes
                    .iter()
                    .any(|(key, value)| value.is_some() || *key == old.key_hash);
                if !touched {
                    return Ok(Subtree::Unchanged);
                }
                self.stale.push(addr);
                self.old_leaves.insert(old.key_hash, addr.version);
                self.build(path, &merge_leaf(changes, old))
            }
            Some((addr, StoredNode::Internal(node))) => {
                self.update_internal(path, addr, node, changes)
            }
        }
    }

    fn update_internal(
        &mut self,
        path: NibblePath,
        addr: NodeAddr,
        node: Box<InternalNode>,
        changes: &[Change],
    ) -> Result<Subtree> {
        let mut slots = *node.slots();
        let mut placed: Vec<(u8, LeafNode)> = Vec::new();
        let mut changed = false;
        for (n, group) in by_nibble(changes, path.depth()) {
            let child_path = deeper(&path, n)?;
            let slot = slots
                .get_mut(usize::from(n))
                .ok_or_else(|| anyhow!("nibble {n} out of range"))?;
            let existing = match slot {
                Some(child) => {
                    let child_addr = NodeAddr {
                        version: child.version,
                        path: child_path,
                    };
                    Some((child_addr, self.read_existing(&child_addr)?))
                }
                None => None,
            };
            match self.update(child_path, existing, group)? {
                Subtree::Unchanged => continue,
                Subtree::Empty => *slot = None,
                Subtree::Leaf(leaf) => {
                    *slot = Some(leaf_child(&leaf, self.version));
                    placed.push((n, leaf));
                }
                Subtree::Internal(child) => *slot = Some(child),
            }
            changed = true;
        }
        if !changed {
            return Ok(Subtree::Unchanged);
        }
        self.stale.push(addr);
        let mut children = slots
            .iter()
            .enumerate()
            .filter_map(|(n, c)| c.map(|c| (n, c)));
        match (children.next(), children.next()) {
            (None, _) => return Ok(Subtree::Empty),
            (Some((n, only)), None) if only.is_leaf() => {
                // The only thing left is a leaf: it moves up to this node's place.
                if let Some((_, leaf)) = placed.into_iter().next() {
                    return Ok(Subtree::Leaf(leaf));
                }
                let leaf_addr = NodeAddr {
                    version: only.version,
                    path: deeper(&path, n as u8)?,
                };
                return match self.read_existing(&leaf_addr)? {
                    StoredNode::Leaf(leaf) => {
                        self.stale.push(leaf_addr);
                        self.old_leaves.insert(leaf.key_hash, leaf_addr.version);
                        Ok(Subtree::Leaf(leaf))
                    }
                    _ => Err(anyhow!("tree node {leaf_addr:?} should be a leaf")),
                };
            }
            _ => {}
        }
        for (n, leaf) in placed {
            self.write(deeper(&path, n)?, StoredNode::Leaf(leaf));
        }
        Ok(Subtree::Internal(self.write_internal(path, slots)))
    }

    /// The subtree holding exactly `leaves` (sorted, distinct keys), built from nothing.
    fn build(&mut self, path: NibblePath, leaves: &[LeafNode]) -> Result<Subtree> {
        match leaves {
            [] => return Ok(Subtree::Empty),
            [leaf] => return Ok(Subtree::Leaf(*leaf)),
            _ => {}
        }
        let mut slots = [None; 16];
        for (n, group) in by_nibble(leaves, path.depth()) {
            let child_path = deeper(&path, n)?;
            let child = match self.build(child_path, group)? {
                Subtree::Leaf(leaf) => {
                    self.write(child_path, StoredNode::Leaf(leaf));
                    leaf_child(&leaf, self.version)
                }
                Subtree::Internal(child) => child,
                Subtree::Empty | Subtree::Unchanged => continue,
            };
            if let Some(slot) = slots.get_mut(usize::from(n)) {
                *slot = Some(child);
            }
        }
        Ok(Subtree::Internal(self.write_internal(path, slots)))
    }

    fn write_internal(&mut self, path: NibblePath, slots: [Option<Child>; 16]) -> Child {
        let node = InternalNode::new(slots);
        let child = Child {
            hash: node.hash(),
            version: self.version,
            kind: ChildKind::Internal {
                leaf_count: node.leaf_count(),
            },
        };
        self.write(path, StoredNode::Internal(Box::new(node)));
        child
    }

    fn read_existing(&self, addr: &NodeAddr) -> Result<StoredNode> {
        self.read(addr)?
            .ok_or_else(|| anyhow!("tree node {addr:?} is missing from the state database"))
    }
}

fn deeper(path: &NibblePath, n: u8) -> Result<NibblePath> {
    path.child(n)
        .ok_or_else(|| anyhow!("two keys share a whole 32-byte key hash"))
}

fn leaf_of(&(key_hash, value_hash): &Change) -> Option<LeafNode> {
    value_hash.map(|value_hash| LeafNode {
        key_hash,
        value_hash,
    })
}

fn leaf_child(leaf: &LeafNode, version: Version) -> Child {
    Child {
        hash: leaf.hash(),
        version,
        kind: ChildKind::Leaf,
    }
}

/// The leaves of a subtree that held only `old`, after `changes`, in key order.
fn merge_leaf(changes: &[Change], old: LeafNode) -> Vec<LeafNode> {
    let mut out = Vec::with_capacity(changes.len().saturating_add(1));
    let mut old = Some(old);
    for change in changes {
        if let Some(leaf) = old {
            if leaf.key_hash < change.0 {
                out.push(leaf);
                old = None;
            } else if leaf.key_hash == change.0 {
                old = None; // replaced or deleted by the change
            }
        }
        out.extend(leaf_of(change));
    }
    out.extend(old);
    out
}

trait KeyHashed {
    fn key_hash(&self) -> &[u8; 32];
}

impl KeyHashed for Change {
    fn key_hash(&self) -> &[u8; 32] {
        &self.0
    }
}

impl KeyHashed for LeafNode {
    fn key_hash(&self) -> &[u8; 32] {
        &self.key_hash
    }
}

/// Splits items sorted by key hash into runs sharing nibble `depth`.
fn by_nibble<T: KeyHashed>(items: &[T], depth: usize) -> impl Iterator<Item = (u8, &[T])> {
    let mut rest = items;
    std::iter::from_fn(move || {
        let first = rest.first()?;
        let n = nibble(first.key_hash(), depth);
        let run = rest
            .iter()
            .position(|item| nibble(item.key_hash(), depth) != n)
            .unwrap_or(rest.len());
        let (group, tail) = rest.split_at(run);
        rest = tail;
        Some((n, group))
    })
}
