use gpuchain_types::{key_hash, Blake3Hasher};
use jmt::proof::SparseMerkleProof;
use jmt::RootHash;

/// A proof that does not check out.
#[derive(Debug, thiserror::Error)]
pub enum ProofError {
    /// Not a borsh JMT proof.
    #[error("proof is not decodable: {0}")]
    Decode(String),
    /// The proof does not lead to the app hash.
    #[error("proof does not match app hash {app_hash}: {reason}")]
    Mismatch {
        /// Hex app hash checked against.
        app_hash: String,
        /// What failed.
        reason: String,
    },
}

/// Checks that `key` holds `value` (or is absent, for `None`) under `app_hash`.
pub fn verify_proof(
    app_hash: [u8; 32],
    key: &str,
    value: Option<&[u8]>,
    proof_bytes: &[u8],
) -> Result<(), ProofError> {
    let proof: SparseMerkleProof<Blake3Hasher> =
        borsh::from_slice(proof_bytes).map_err(|e| ProofError::Decode(e.to_string()))?;
    proof
        .verify(RootHash(app_hash), key_hash(key), value)
        .map_err(|e| ProofError::Mismatch {
            app_hash: hex::encode(app_hash),
            reason: e.to_string(),
        })
}
