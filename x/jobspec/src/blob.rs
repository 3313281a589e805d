//! Content-addressed blob references.

use borsh::{BorshDeserialize, BorshSerialize};
use serde::{Deserialize, Serialize};

/// A blake3 hash of a blob's bytes.
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    BorshSerialize,
    BorshDeserialize,
    Serialize,
    Deserialize,
)]
pub struct BlobHash(#[serde(with = "crate::hexser")] pub [u8; 32]);

impl BlobHash {
    /// Lowercase hex form (64 characters), as used in URLs (`/blob/<hex>`).
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Parses 64 hex characters.
    pub fn from_hex(text: &str) -> Option<Self> {
        let mut out = [0u8; 32];
        hex::decode_to_slice(text, &mut out).ok()?;
        Some(Self(out))
    }
}

impl std::fmt::Debug for BlobHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BlobHash({})", self.to_hex())
    }
}

impl std::fmt::Display for BlobHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// A blob the job needs: its hash and exact size (both checked by whoever fetches it) and
/// the URLs it may be fetched from, tried in order.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct BlobRef {
    /// blake3 of the blob's bytes (hex in JSON).
    #[serde(with = "crate::hexser")]
    pub blake3: [u8; 32],
    /// Exact size in bytes.
    pub size: u64,
    /// Mirrors, tried in order; each must be `http://` or `https://`.
    #[serde(default)]
    pub urls: Vec<String>,
}

impl BlobRef {
    /// The blob's hash as a [`BlobHash`].
    pub fn hash(&self) -> BlobHash {
        BlobHash(self.blake3)
    }
}
