//! A blake3 Merkle tree over transcript leaves. Leaf hash `blake3(0x00 ‖ leaf)`, node hash
//! `blake3(0x01 ‖ left ‖ right)`; an odd node at the end of a level is carried up unchanged.
//! The root of zero leaves is `blake3(0x02)`.

fn leaf_hash(leaf: &[u8; 32]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(&[0]);
    h.update(leaf);
    *h.finalize().as_bytes()
}

fn node_hash(l: &[u8; 32], r: &[u8; 32]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(&[1]);
    h.update(l);
    h.update(r);
    *h.finalize().as_bytes()
}

fn next_level(level: &[[u8; 32]]) -> Vec<[u8; 32]> {
    level
        .chunks(2)
        .map(|c| {
            if c.len() == 2 {
                node_hash(&c[0], &c[1])
            } else {
                c[0]
            }
        })
        .collect()
}

/// The root over `leaves`.
pub fn merkle_root(leaves: &[[u8; 32]]) -> [u8; 32] {
    if leaves.is_empty() {
        return *blake3::hash(&[2]).as_bytes();
    }
    let mut level: Vec<[u8; 32]> = leaves.iter().map(leaf_hash).collect();
    while level.len() > 1 {
        level = next_level(&level);
    }
    level[0]
}

/// Sibling hashes from leaf `index` up to the root; `None` marks a level where the node had
/// no sibling. Used to show a verifier that an audited round is part of a committed root.
pub fn merkle_proof(leaves: &[[u8; 32]], mut index: usize) -> Vec<Option<[u8; 32]>> {
    let mut proof = Vec::new();
    let mut level: Vec<[u8; 32]> = leaves.iter().map(leaf_hash).collect();
    while level.len() > 1 {
        let sib = index ^ 1;
        proof.push(level.get(sib).copied());
        level = next_level(&level);
        index /= 2;
    }
    proof
}

/// Checks that `leaf` at `index` is under `root`.
pub fn verify_proof(
    root: &[u8; 32],
    leaf: &[u8; 32],
    mut index: usize,
    proof: &[Option<[u8; 32]>],
) -> bool {
    let mut h = leaf_hash(leaf);
    for sib in proof {
        if let Some(s) = sib {
            h = if index % 2 == 0 {
                node_hash(&h, s)
            } else {
                node_hash(s, &h)
            };
        }
        index /= 2;
    }
    &h == root
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_verify_for_every_leaf_and_fail_for_others() {
        let leaves: Vec<[u8; 32]> = (0..7u8).map(|i| [i; 32]).collect();
        let root = merkle_root(&leaves);
        for i in 0..leaves.len() {
            let p = merkle_proof(&leaves, i);
            assert!(verify_proof(&root, &leaves[i], i, &p), "leaf {i}");
            assert!(!verify_proof(&root, &[99; 32], i, &p));
        }
        assert_ne!(merkle_root(&leaves[..6]), root);
    }
}
