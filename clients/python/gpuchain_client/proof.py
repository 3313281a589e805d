"""Verification of proven queries, as docs/protocol.md "Proofs" states: a borsh
SparseMerkleProof checked against the app hash of a signed header."""

import blake3

from .borsh import Reader

PLACEHOLDER = b"SPARSE_MERKLE_PLACEHOLDER_HASH__"
LEAF_DOMAIN = b"JMT::LeafNode"
INTERNAL_DOMAIN = b"JMT::IntrnalNode"


class ProofError(ValueError):
    """A proof that does not show what it was asked to show."""


def h(*parts):
    hasher = blake3.blake3()
    for p in parts:
        hasher.update(p)
    return hasher.digest()


def key_hash(key):
    """The tree position of a state key: blake3 of its UTF-8 bytes."""
    return h(key.encode("utf-8"))


def leaf_hash(key_hash_, value_hash):
    return h(LEAF_DOMAIN, key_hash_, value_hash)


def internal_hash(left, right):
    return h(INTERNAL_DOMAIN, left, right)


def decode_proof(data):
    """(leaf, siblings): leaf is None or (key_hash, value_hash); siblings are node hashes,
    nearest the leaf first."""
    r = Reader(data)
    leaf = r.option(lambda r: (r.fixed(32), r.fixed(32)))
    siblings = []
    for _ in range(r.u32()):
        tag = r.u8()
        if tag == 0:
            siblings.append(PLACEHOLDER)
        elif tag == 1:
            siblings.append(internal_hash(r.fixed(32), r.fixed(32)))
        elif tag == 2:
            siblings.append(leaf_hash(r.fixed(32), r.fixed(32)))
        else:
            raise ProofError(f"unknown sibling node tag {tag}")
    r.finish()
    return leaf, siblings


def bit(hash32, index):
    """Bit `index` of a 32-byte hash, most significant bit of byte 0 first."""
    return (hash32[index // 8] >> (7 - index % 8)) & 1


def common_prefix_bits(a, b):
    n = 0
    while n < 256 and bit(a, n) == bit(b, n):
        n += 1
    return n


def verify(app_hash, key, value, proof_bytes):
    """Checks that state key `key` holds `value` (bytes), or is absent (`value` None), in the
    tree whose root is `app_hash`. Raises ProofError otherwise."""
    leaf, siblings = decode_proof(proof_bytes)
    if len(siblings) > 256:
        raise ProofError("more than 256 siblings")
    kh = key_hash(key)
    if value is not None:
        if leaf is None:
            raise ProofError("a value was expected but the proof shows an empty subtree")
        if leaf[0] != kh:
            raise ProofError("the proof's leaf is another key")
        if leaf[1] != h(value):
            raise ProofError("the value does not hash to the proof's leaf")
    elif leaf is not None:
        if leaf[0] == kh:
            raise ProofError("absence was expected but the key is present")
        # The other key's leaf stands alone in the subtree the absent key would be in.
        if common_prefix_bits(kh, leaf[0]) < len(siblings):
            raise ProofError("the leaf in the proof is not on the absent key's path")
    node = PLACEHOLDER if leaf is None else leaf_hash(*leaf)
    depth = len(siblings)
    for sibling in siblings:
        depth -= 1
        if bit(kh, depth):
            node = internal_hash(sibling, node)
        else:
            node = internal_hash(node, sibling)
    if node != app_hash:
        raise ProofError(f"proof leads to root {node.hex()}, not the app hash {app_hash.hex()}")
