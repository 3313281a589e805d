//! What a served request leaves behind, off chain and on: the provider's [`Receipt`] for each
//! request/response pair, the Merkle root over a batch of them, and the client's signed
//! [`BatchAck`] of that batch, which is what a provider claims payment with. Pure functions,
//! shared by the chain, the provider's endpoint and the client's gateway.
//!
//! The tree: leaves are [`Receipt::leaf`]; a level's nodes are paired left to right and each
//! pair hashed as `blake3(NODE_DOMAIN ‖ left ‖ right)`; an unpaired last node moves up
//! unchanged; the root of one leaf is that leaf. A proof lists the siblings from the leaf up,
//! skipping the levels where the node had none.

use borsh::{BorshDeserialize, BorshSerialize};
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use gpuchain_types::Address;
use serde::{Deserialize, Serialize};

/// Domain of a receipt's leaf hash.
pub const LEAF_DOMAIN: &[u8] = b"gpuchain/serving/receipt/v1";
/// Domain of an inner node's hash.
pub const NODE_DOMAIN: &[u8] = b"gpuchain/serving/node/v1";
/// Domain of the bytes a client signs to acknowledge a batch.
pub const ACK_DOMAIN: &[u8] = b"gpuchain/serving/ack/v1";
/// Domain of the bytes a client signs over each request it sends on a lease.
pub const REQUEST_DOMAIN: &[u8] = b"gpuchain/serving/request/v2";
/// Longest proof accepted (a batch of up to 2^40 receipts).
pub const MAX_PROOF_LEN: usize = 40;

/// One answered request, as the provider records it and the client checks it.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct Receipt {
    /// The lease it was served under.
    pub lease_id: u64,
    /// Its place in the lease: 0, 1, 2, … with no gaps.
    pub seq: u64,
    /// blake3 of the request body exactly as the provider received it.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub request_hash: [u8; 32],
    /// blake3 of the answer exactly as the provider sent it.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub response_hash: [u8; 32],
    /// What is charged: tokens (prompt + generated) for generation, inputs for embeddings.
    pub units: u64,
}

impl Receipt {
    /// Its leaf in a batch's tree.
    pub fn leaf(&self) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        h.update(LEAF_DOMAIN);
        h.update(&self.lease_id.to_be_bytes());
        h.update(&self.seq.to_be_bytes());
        h.update(&self.request_hash);
        h.update(&self.response_hash);
        h.update(&self.units.to_be_bytes());
        *h.finalize().as_bytes()
    }
}

fn node(left: &[u8; 32], right: &[u8; 32]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(NODE_DOMAIN);
    h.update(left);
    h.update(right);
    *h.finalize().as_bytes()
}

fn next_level(level: &[[u8; 32]]) -> Vec<[u8; 32]> {
    level
        .chunks(2)
        .map(|pair| match pair {
            [left, right] => node(left, right),
            [single] => *single,
            _ => [0; 32],
        })
        .collect()
}

/// The root over `leaves` in order; `None` for an empty batch.
pub fn merkle_root(leaves: &[[u8; 32]]) -> Option<[u8; 32]> {
    let mut level = leaves.to_vec();
    while level.len() > 1 {
        level = next_level(&level);
    }
    level.first().copied()
}

/// The proof of the leaf at `index`; `None` when `index` is outside the batch.
pub fn merkle_proof(leaves: &[[u8; 32]], index: usize) -> Option<Vec<[u8; 32]>> {
    if index >= leaves.len() {
        return None;
    }
    let mut proof = Vec::new();
    let mut level = leaves.to_vec();
    let mut i = index;
    while level.len() > 1 {
        if let Some(sibling) = level.get(i ^ 1) {
            proof.push(*sibling);
        }
        level = next_level(&level);
        i /= 2;
    }
    Some(proof)
}

/// Whether `proof` shows `leaf` at `index` of a batch of `count` leaves under `root`.
pub fn verify_proof(
    leaf: [u8; 32],
    index: u64,
    count: u64,
    proof: &[[u8; 32]],
    root: &[u8; 32],
) -> bool {
    if index >= count || proof.len() > MAX_PROOF_LEN {
        return false;
    }
    let mut hash = leaf;
    let mut i = index;
    let mut width = count;
    let mut siblings = proof.iter();
    while width > 1 {
        let sibling = i ^ 1;
        if sibling < width {
            let Some(s) = siblings.next() else {
                return false;
            };
            hash = if i & 1 == 0 {
                node(&hash, s)
            } else {
                node(s, &hash)
            };
        }
        i /= 2;
        width = width.div_ceil(2);
    }
    siblings.next().is_none() && hash == *root
}

/// A client's acknowledgement of a batch of receipts: of the requests numbered `first_seq ..
/// end_seq` on a lease, the client got the answers of `count` (the receipts under `root`,
/// in increasing `seq`), `units` in all. A receipt whose answer never reached the client is
/// simply not in the batch, and the range is closed for good. Signed with the client's
/// account key over [`BatchAck::sign_bytes`].
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct BatchAck {
    /// The chain: an acknowledgement for one chain is worthless on another.
    pub chain_id: String,
    /// The lease.
    pub lease_id: u64,
    /// The first request number the batch covers.
    pub first_seq: u64,
    /// One past the last request number it covers.
    pub end_seq: u64,
    /// How many receipts.
    pub count: u64,
    /// Sum of their units.
    pub units: u128,
    /// [`merkle_root`] of their leaves.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub root: [u8; 32],
}

impl BatchAck {
    /// The acknowledgement of `receipts` (one lease, at least one, `seq` strictly
    /// increasing within `first_seq .. end_seq`).
    pub fn of(
        chain_id: &str,
        lease_id: u64,
        first_seq: u64,
        end_seq: u64,
        receipts: &[Receipt],
    ) -> Option<BatchAck> {
        let in_order = receipts.windows(2).all(|w| match w {
            [a, b] => a.seq < b.seq,
            _ => true,
        });
        let inside = receipts
            .iter()
            .all(|r| r.lease_id == lease_id && first_seq <= r.seq && r.seq < end_seq);
        if receipts.is_empty() || !in_order || !inside {
            return None;
        }
        let leaves: Vec<[u8; 32]> = receipts.iter().map(Receipt::leaf).collect();
        Some(BatchAck {
            chain_id: chain_id.to_string(),
            lease_id,
            first_seq,
            end_seq,
            count: u64::try_from(receipts.len()).ok()?,
            units: receipts.iter().map(|r| u128::from(r.units)).sum(),
            root: merkle_root(&leaves)?,
        })
    }

    /// The bytes the client signs.
    pub fn sign_bytes(&self) -> Vec<u8> {
        let mut bytes = ACK_DOMAIN.to_vec();
        bytes.extend(borsh::to_vec(self).unwrap_or_default());
        bytes
    }

    /// Whether `signature` by `public_key` acknowledges this batch for the account `client`.
    pub fn is_signed_by(
        &self,
        client: &Address,
        public_key: &[u8; 32],
        signature: &[u8; 64],
    ) -> bool {
        if Address::from_public_key(public_key) != *client {
            return false;
        }
        let Ok(key) = VerifyingKey::from_bytes(public_key) else {
            return false;
        };
        key.verify(&self.sign_bytes(), &Signature::from_bytes(signature))
            .is_ok()
    }
}

/// The bytes a client signs to send `body` on lease `lease_id` of chain `chain_id` once:
/// `REQUEST_DOMAIN ‖ borsh(chain_id) ‖ lease_id BE ‖ nonce ‖ blake3(body)`. The provider
/// answers a lease's requests only when they are signed by the lease's client, each nonce
/// once; the chain id keeps a request signed for one chain's lease from being replayed to
/// the lease of the same number on another chain (work its provider would never be paid
/// for).
pub fn request_sign_bytes(chain_id: &str, lease_id: u64, nonce: &[u8; 16], body: &[u8]) -> Vec<u8> {
    let mut bytes = REQUEST_DOMAIN.to_vec();
    bytes.extend(borsh::to_vec(chain_id).unwrap_or_default());
    bytes.extend(lease_id.to_be_bytes());
    bytes.extend(nonce);
    bytes.extend(blake3::hash(body).as_bytes());
    bytes
}

/// Whether `signature` by `public_key` signs `body` on `lease_id` of `chain_id` with `nonce`.
pub fn request_signed_by(
    public_key: &[u8; 32],
    signature: &[u8; 64],
    (chain_id, lease_id): (&str, u64),
    nonce: &[u8; 16],
    body: &[u8],
) -> bool {
    VerifyingKey::from_bytes(public_key).is_ok_and(|key| {
        key.verify(
            &request_sign_bytes(chain_id, lease_id, nonce, body),
            &Signature::from_bytes(signature),
        )
        .is_ok()
    })
}

pub use gpuchain_jobspec::AnswerRecord;

/// A batch acknowledgement with the client's key and signature: what a client's gateway
/// hands its provider, and what the provider claims with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedAck {
    /// The batch.
    pub ack: BatchAck,
    /// The client's public key.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub client_key: [u8; 32],
    /// Its signature over [`BatchAck::sign_bytes`].
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub signature: [u8; 64],
}

/// What a client's gateway posts to its provider: the signed acknowledgement and the request
/// numbers of the receipts it covers, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckedBatch {
    /// The acknowledgement.
    pub signed: SignedAck,
    /// `seq` of each receipt in the batch.
    pub seqs: Vec<u64>,
}

impl SignedAck {
    /// The claim of this batch.
    pub fn claim(&self) -> crate::MsgClaimServing {
        crate::MsgClaimServing {
            lease_id: self.ack.lease_id,
            first_seq: self.ack.first_seq,
            end_seq: self.ack.end_seq,
            count: self.ack.count,
            units: self.ack.units,
            root: self.ack.root,
            client_key: self.client_key,
            client_signature: self.signature,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt(seq: u64) -> Receipt {
        Receipt {
            lease_id: 7,
            seq,
            request_hash: [seq as u8; 32],
            response_hash: [seq as u8 ^ 0xff; 32],
            units: 10 + seq,
        }
    }

    #[test]
    fn every_leaf_of_every_batch_size_proves_and_nothing_else_does() {
        for count in 1..=33u64 {
            let leaves: Vec<[u8; 32]> = (0..count).map(|s| receipt(s).leaf()).collect();
            let root = merkle_root(&leaves).unwrap();
            for index in 0..count {
                let proof = merkle_proof(&leaves, index as usize).unwrap();
                let leaf = leaves[index as usize];
                assert!(
                    verify_proof(leaf, index, count, &proof, &root),
                    "{count}/{index}"
                );
                // Another position, another batch size, another leaf or a cut proof fail.
                if count > 1 {
                    let other = (index + 1) % count;
                    assert!(!verify_proof(leaf, other, count, &proof, &root));
                    assert!(!verify_proof(
                        leaves[other as usize],
                        index,
                        count,
                        &proof,
                        &root
                    ));
                    assert!(!verify_proof(leaf, index, count, &proof[1..], &root));
                }
                let mut longer = proof.clone();
                longer.push([0; 32]);
                assert!(!verify_proof(leaf, index, count, &longer, &root));
            }
            assert!(merkle_proof(&leaves, count as usize).is_none());
        }
        assert_eq!(merkle_root(&[]), None);
    }

    #[test]
    fn a_leaf_commits_to_every_field() {
        let base = receipt(3);
        let mut changed = vec![base.clone(); 5];
        changed[0].lease_id += 1;
        changed[1].seq += 1;
        changed[2].request_hash[0] ^= 1;
        changed[3].response_hash[31] ^= 1;
        changed[4].units += 1;
        for c in changed {
            assert_ne!(c.leaf(), base.leaf());
        }
    }

    #[test]
    fn an_ack_covers_increasing_receipts_of_one_lease_inside_its_range_and_binds_its_signer() {
        let receipts: Vec<Receipt> = (5..9).map(receipt).collect();
        let ack = BatchAck::of("c", 7, 5, 9, &receipts).unwrap();
        assert_eq!(
            (ack.first_seq, ack.end_seq, ack.count, ack.units),
            (5, 9, 4, 15 + 16 + 17 + 18)
        );
        // A receipt the client never got is left out; the range still closes.
        let mut gap = receipts.clone();
        gap.remove(1);
        let partial = BatchAck::of("c", 7, 5, 9, &gap).unwrap();
        assert_eq!((partial.count, partial.end_seq), (3, 9));
        let mut swapped = receipts.clone();
        swapped.swap(0, 1);
        assert!(BatchAck::of("c", 7, 5, 9, &swapped).is_none());
        assert!(
            BatchAck::of("c", 7, 6, 9, &receipts).is_none(),
            "5 is outside"
        );
        assert!(
            BatchAck::of("c", 7, 5, 8, &receipts).is_none(),
            "8 is outside"
        );
        let mut mixed = receipts.clone();
        mixed[2].lease_id = 8;
        assert!(BatchAck::of("c", 7, 5, 9, &mixed).is_none());
        assert!(BatchAck::of("c", 7, 5, 9, &[]).is_none());

        let key = ed25519_dalek::SigningKey::from_bytes(&[4; 32]);
        let public = key.verifying_key().to_bytes();
        let client = Address::from_public_key(&public);
        use ed25519_dalek::Signer;
        let signature = key.sign(&ack.sign_bytes()).to_bytes();
        assert!(ack.is_signed_by(&client, &public, &signature));
        assert!(!ack.is_signed_by(&Address([1; 20]), &public, &signature));
        let mut other_chain = ack.clone();
        other_chain.chain_id = "d".into();
        assert!(!other_chain.is_signed_by(&client, &public, &signature));
        let mut more = ack.clone();
        more.units += 1;
        assert!(!more.is_signed_by(&client, &public, &signature));
    }

    #[test]
    fn a_request_signature_holds_only_for_its_chain_lease_nonce_and_body() {
        use ed25519_dalek::Signer;
        let key = ed25519_dalek::SigningKey::from_bytes(&[4; 32]);
        let public = key.verifying_key().to_bytes();
        let (nonce, body) = ([7u8; 16], b"{\"model\":\"m\"}");
        let signature = key
            .sign(&request_sign_bytes("c", 3, &nonce, body))
            .to_bytes();
        assert!(request_signed_by(
            &public,
            &signature,
            ("c", 3),
            &nonce,
            body
        ));
        assert!(
            !request_signed_by(&public, &signature, ("d", 3), &nonce, body),
            "another chain"
        );
        assert!(!request_signed_by(
            &public,
            &signature,
            ("c", 4),
            &nonce,
            body
        ));
        assert!(!request_signed_by(
            &public,
            &signature,
            ("c", 3),
            &[8; 16],
            body
        ));
        assert!(!request_signed_by(
            &public,
            &signature,
            ("c", 3),
            &nonce,
            b"{}"
        ));
    }
}
