//! docs/protocol.md's proof vectors (a small tree, a membership and two absence proofs) are
//! exactly what the store builds and proves, and they verify against its root. A client in
//! another language checks its own verifier against the same vectors
//! (clients/python/tests/test_vectors.py).
//!
//! `GPUCHAIN_PRINT_VECTORS=1 cargo test --test protocol_proof_vectors_are_what_the_store_proves
//! -- --nocapture` prints the block to paste into the document after a deliberate change.

use gpuchain_chain::Store;
use gpuchain_types::{key_hash, Blake3Hasher, Write};
use jmt::proof::SparseMerkleProof;
use jmt::RootHash;

/// The tree of the vectors: six keys, written at genesis.
fn tree() -> Vec<(String, Vec<u8>)> {
    let account = |balance: u128, nonce: u64| borsh::to_vec(&(balance, nonce)).unwrap();
    vec![
        (
            format!("bank/accounts/{}", hex::encode([0x22; 20])),
            account(1_000_000, 3),
        ),
        (
            format!("bank/accounts/{}", hex::encode([0x44; 20])),
            account(5, 0),
        ),
        (
            format!("bank/accounts/{}", hex::encode([0x66; 20])),
            account(7, 1),
        ),
        (
            format!("bank/accounts/{}", hex::encode([0x88; 20])),
            account(9, 2),
        ),
        ("bank/supply".into(), borsh::to_vec(&1_000_021u128).unwrap()),
        (
            "chain/chain_id".into(),
            borsh::to_vec(&"gpuchain-1".to_string()).unwrap(),
        ),
    ]
}

const MEMBER: &str = "bank/supply";
/// Two absent keys: the first lands where another key's leaf sits (the proof carries that
/// leaf), the second in an empty subtree (the proof carries no leaf).
const ABSENT: [&str; 2] = [
    "bank/accounts/5555555555555555555555555555555555555555",
    "bank/accounts/3333333333333333333333333333333333333333",
];

fn vectors() -> serde_json::Value {
    let doc = include_str!("../../docs/protocol.md");
    let tag = "```json proof-vectors";
    let start = doc.find(tag).expect("proof vector block") + tag.len();
    let end = start + doc[start..].find("```").expect("end of proof vector block");
    serde_json::from_str(&doc[start..end]).expect("proof vectors are JSON")
}

fn proof_json(store: &Store, key: &str) -> (Option<Vec<u8>>, serde_json::Value, Vec<u8>) {
    let (value, proof) = store.get_with_proof(key, 1).unwrap();
    let bytes = borsh::to_vec(&proof).unwrap();
    let json = serde_json::json!({
        "key": key,
        "key_hash": hex::encode(key_hash(key).0),
        "value": value.as_ref().map(hex::encode),
        "proof": hex::encode(&bytes),
    });
    (value, json, bytes)
}

#[test]
fn protocol_proof_vectors_are_what_the_store_proves() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let genesis: Write = tree().into_iter().map(|(k, v)| (k, Some(v))).collect();
    let block = store.prepare(1, Some(genesis), Write::new()).unwrap();
    let root = block.app_hash;
    store.commit(block).unwrap();

    let mut proofs = Vec::new();
    for key in std::iter::once(MEMBER).chain(ABSENT) {
        let (value, json, bytes) = proof_json(&store, key);
        let proof: SparseMerkleProof<Blake3Hasher> = borsh::from_slice(&bytes).unwrap();
        proof
            .verify(RootHash(root), key_hash(key), value.as_deref())
            .unwrap();
        assert_eq!(value.is_some(), key == MEMBER, "{key}");
        // The first absent key's path ends at another key's leaf, the second's in an empty
        // subtree: the vectors show both shapes of an absence proof.
        assert_eq!(proof.leaf().is_some(), key != ABSENT[1], "{key}");
        proofs.push(json);
    }
    let produced = serde_json::json!({
        "tree": tree()
            .iter()
            .map(|(k, v)| serde_json::json!({ "key": k, "value": hex::encode(v) }))
            .collect::<Vec<_>>(),
        "root": hex::encode(root),
        "membership": proofs[0],
        "absence_beside_a_leaf": proofs[1],
        "absence_in_an_empty_subtree": proofs[2],
    });
    if std::env::var_os("GPUCHAIN_PRINT_VECTORS").is_some() {
        println!("{}", serde_json::to_string_pretty(&produced).unwrap());
        return;
    }
    assert_eq!(
        produced,
        vectors(),
        "docs/protocol.md's proof vectors are stale"
    );
}

#[test]
fn a_proof_vector_with_one_flipped_byte_fails() {
    let v = vectors();
    let root: [u8; 32] = hex::decode(v["root"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    let m = &v["membership"];
    let mut proof = hex::decode(m["proof"].as_str().unwrap()).unwrap();
    let value = hex::decode(m["value"].as_str().unwrap()).unwrap();
    let last = proof.len() - 1;
    proof[last] ^= 1;
    let proof: SparseMerkleProof<Blake3Hasher> = borsh::from_slice(&proof).unwrap();
    assert!(proof
        .verify(RootHash(root), key_hash(MEMBER), Some(&value))
        .is_err());
}
