//! Tree nodes in the Jellyfish Merkle Tree's stored format: the borsh bytes of these types
//! are exactly those of `jmt::storage::Node` and `NodeKey`, and their hashes are the JMT's.
//! The batch update ([`super::update`]) builds and writes them; the `jmt` crate reads the
//! same records to answer proof queries. (The crate keeps its internal-node types private,
//! hence the mirror.)

use borsh::io::{Error, ErrorKind, Read, Result as IoResult, Write as IoWrite};
use borsh::{BorshDeserialize, BorshSerialize};
use jmt::proof::{INTERNAL_DOMAIN_SEPARATOR, LEAF_DOMAIN_SEPARATOR};
use jmt::storage::NodeKey;
use jmt::Version;

/// The hash of an empty subtree.
pub(crate) const PLACEHOLDER_HASH: [u8; 32] = *b"SPARSE_MERKLE_PLACEHOLDER_HASH__";

/// Key hashes are 32 bytes: 64 nibbles, the deepest a node can sit.
pub(crate) const MAX_DEPTH: usize = 64;

/// A position in the tree: the first `len` nibbles of a key hash, high nibble first; the
/// unused low nibble of an odd-length path is zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct NibblePath {
    len: u8,
    bytes: [u8; 32],
}

impl NibblePath {
    pub(crate) const ROOT: NibblePath = NibblePath {
        len: 0,
        bytes: [0; 32],
    };

    pub(crate) fn depth(&self) -> usize {
        usize::from(self.len)
    }

    /// The path one nibble deeper, or `None` at the bottom of the tree.
    pub(crate) fn child(&self, nibble: u8) -> Option<NibblePath> {
        let depth = self.depth();
        let mut out = *self;
        let byte = out.bytes.get_mut(depth / 2)?;
        *byte |= if depth.is_multiple_of(2) {
            (nibble & 0x0f) << 4
        } else {
            nibble & 0x0f
        };
        out.len = self.len.checked_add(1)?;
        Some(out)
    }

    fn used_bytes(&self) -> &[u8] {
        let used = self.depth().div_ceil(2);
        self.bytes.get(..used).unwrap_or(&self.bytes)
    }
}

/// Nibble `depth` of a key hash (0 = the high nibble of the first byte); 0 past the end.
pub(crate) fn nibble(key_hash: &[u8; 32], depth: usize) -> u8 {
    let byte = key_hash.get(depth / 2).copied().unwrap_or(0);
    if depth.is_multiple_of(2) {
        byte >> 4
    } else {
        byte & 0x0f
    }
}

/// Where a node is stored: the version that wrote it and its position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct NodeAddr {
    pub(crate) version: Version,
    pub(crate) path: NibblePath,
}

impl NodeAddr {
    pub(crate) fn root(version: Version) -> NodeAddr {
        NodeAddr {
            version,
            path: NibblePath::ROOT,
        }
    }

    /// The address of a `jmt` node key (for the crate's proof reads).
    pub(crate) fn from_jmt(key: &NodeKey) -> Option<NodeAddr> {
        let mut path = NibblePath::ROOT;
        for nibble in key.nibble_path().nibbles() {
            path = path.child(u8::from(nibble))?;
        }
        Some(NodeAddr {
            version: key.version(),
            path,
        })
    }
}

/// Layout of borsh(`NodeKey`): version, nibble count (both u64), then the path bytes as a
/// borsh `Vec<u8>` (u32 length).
impl BorshSerialize for NodeAddr {
    fn serialize<W: IoWrite>(&self, writer: &mut W) -> IoResult<()> {
        self.version.serialize(writer)?;
        u64::from(self.path.len).serialize(writer)?;
        let bytes = self.path.used_bytes();
        (bytes.len() as u32).serialize(writer)?;
        writer.write_all(bytes)
    }
}

impl BorshDeserialize for NodeAddr {
    fn deserialize_reader<R: Read>(reader: &mut R) -> IoResult<Self> {
        let version = u64::deserialize_reader(reader)?;
        let nibbles = u64::deserialize_reader(reader)?;
        let bytes = Vec::<u8>::deserialize_reader(reader)?;
        let invalid = || Error::new(ErrorKind::InvalidData, "bad tree node path");
        let len = u8::try_from(nibbles)
            .ok()
            .filter(|&n| usize::from(n) <= MAX_DEPTH)
            .ok_or_else(invalid)?;
        if bytes.len() != usize::from(len).div_ceil(2) {
            return Err(invalid());
        }
        let mut path = NibblePath {
            len,
            bytes: [0; 32],
        };
        path.bytes
            .get_mut(..bytes.len())
            .ok_or_else(invalid)?
            .copy_from_slice(&bytes);
        Ok(NodeAddr { version, path })
    }
}

/// A stored node; borsh-identical to `jmt::storage::Node`.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub(crate) enum StoredNode {
    /// The root of an empty tree.
    Null,
    /// Boxed: a node is a kilobyte, and maps of nodes move their entries around.
    Internal(Box<InternalNode>),
    Leaf(LeafNode),
}

impl StoredNode {
    pub(crate) fn hash(&self) -> [u8; 32] {
        match self {
            StoredNode::Null => PLACEHOLDER_HASH,
            StoredNode::Internal(node) => node.hash(),
            StoredNode::Leaf(leaf) => leaf.hash(),
        }
    }

    /// The same node as the `jmt` crate's type (proof queries only).
    pub(crate) fn to_jmt(&self) -> anyhow::Result<jmt::storage::Node> {
        Ok(borsh::from_slice(&borsh::to_vec(self)?)?)
    }
}

/// A key's leaf; borsh-identical to `jmt::storage::LeafNode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub(crate) struct LeafNode {
    pub(crate) key_hash: [u8; 32],
    pub(crate) value_hash: [u8; 32],
}

impl LeafNode {
    pub(crate) fn hash(&self) -> [u8; 32] {
        let mut hasher = blake3::Hasher::new();
        hasher.update(LEAF_DOMAIN_SEPARATOR);
        hasher.update(&self.key_hash);
        hasher.update(&self.value_hash);
        *hasher.finalize().as_bytes()
    }
}

/// An internal node's reference to a child; borsh-identical to the JMT's `Child`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub(crate) struct Child {
    pub(crate) hash: [u8; 32],
    /// The version that wrote the child (its node address is this version and the parent's
    /// path plus the child's nibble).
    pub(crate) version: Version,
    pub(crate) kind: ChildKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub(crate) enum ChildKind {
    Leaf,
    Internal { leaf_count: u64 },
}

impl Child {
    pub(crate) fn is_leaf(&self) -> bool {
        matches!(self.kind, ChildKind::Leaf)
    }

    fn leaf_count(&self) -> u64 {
        match self.kind {
            ChildKind::Leaf => 1,
            ChildKind::Internal { leaf_count } => leaf_count,
        }
    }
}

/// Up to 16 children by nibble; borsh-identical to the JMT's `InternalNode` (its `Children`
/// struct, the slots then their count, followed by the leaf count).
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub(crate) struct InternalNode {
    slots: [Option<Child>; 16],
    num_children: u64,
    leaf_count: u64,
}

impl InternalNode {
    pub(crate) fn new(slots: [Option<Child>; 16]) -> InternalNode {
        let children = slots.iter().flatten();
        let num_children = children.clone().count() as u64;
        let leaf_count = children.fold(0u64, |sum, c| sum.saturating_add(c.leaf_count()));
        InternalNode {
            slots,
            num_children,
            leaf_count,
        }
    }

    pub(crate) fn slots(&self) -> &[Option<Child>; 16] {
        &self.slots
    }

    pub(crate) fn leaf_count(&self) -> u64 {
        self.leaf_count
    }

    /// The JMT's internal-node hash: a 4-level binary Merkle tree over the 16 slots, where a
    /// range holding nothing hashes to the placeholder and a range holding a single leaf (and
    /// nothing else) is that leaf's hash.
    pub(crate) fn hash(&self) -> [u8; 32] {
        let (mut present, mut leaves) = (0u16, 0u16);
        for (i, child) in self.slots.iter().enumerate() {
            if let Some(child) = child {
                present |= 1 << i;
                if child.is_leaf() {
                    leaves |= 1 << i;
                }
            }
        }
        self.range_hash(0, 16, present, leaves)
    }

    fn range_hash(&self, start: u32, width: u32, present: u16, leaves: u16) -> [u8; 32] {
        // `width` is 16, 8, 4, 2 or 1 and `start + width` at most 16: no bit is lost.
        let mask = 1u32.wrapping_shl(width).wrapping_sub(1).wrapping_shl(start) as u16;
        let (present, leaves) = (present & mask, leaves & mask);
        if present == 0 {
            return PLACEHOLDER_HASH;
        }
        if width == 1 || (present.count_ones() == 1 && leaves != 0) {
            let only = present.trailing_zeros() as usize;
            return match self.slots.get(only) {
                Some(Some(child)) => child.hash,
                _ => PLACEHOLDER_HASH, // unreachable: `present` mirrors the slots
            };
        }
        let half = width / 2;
        let left = self.range_hash(start, half, present, leaves);
        let right = self.range_hash(start.saturating_add(half), half, present, leaves);
        let mut hasher = blake3::Hasher::new();
        hasher.update(INTERNAL_DOMAIN_SEPARATOR);
        hasher.update(&left);
        hasher.update(&right);
        *hasher.finalize().as_bytes()
    }
}
