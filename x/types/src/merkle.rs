//! The hasher of the state Merkle tree (a Jellyfish Merkle Tree over blake3). Shared by the
//! app, which builds the tree, and clients, which verify proofs against the app hash.

/// blake3 as the JMT's hash function.
#[derive(Default)]
pub struct Blake3Hasher(blake3::Hasher);

impl jmt::SimpleHasher for Blake3Hasher {
    fn new() -> Self {
        Blake3Hasher(blake3::Hasher::new())
    }

    fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    fn finalize(self) -> [u8; 32] {
        *self.0.finalize().as_bytes()
    }
}

/// The tree position of a state key.
pub fn key_hash(key: &str) -> jmt::KeyHash {
    jmt::KeyHash::with::<Blake3Hasher>(key.as_bytes())
}

/// Name of the proof operation in ABCI query responses.
pub const PROOF_OP_TYPE: &str = "jmt:blake3";
