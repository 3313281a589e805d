//! Serde for fixed-size byte arrays (hashes, keys, consensus addresses) as lower-case hex:
//! `#[serde(with = "gpuchain_types::hex_bytes")]`.

use serde::{Deserialize, Deserializer, Serializer};

/// Writes `bytes` as lower-case hex.
pub fn serialize<S: Serializer, const N: usize>(bytes: &[u8; N], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&hex::encode(bytes))
}

/// Reads exactly `N` bytes of hex.
pub fn deserialize<'de, D: Deserializer<'de>, const N: usize>(d: D) -> Result<[u8; N], D::Error> {
    let text = <String as Deserialize>::deserialize(d)?;
    let bytes = hex::decode(&text).map_err(serde::de::Error::custom)?;
    bytes
        .try_into()
        .map_err(|_| serde::de::Error::custom(format!("expected {N} bytes of hex")))
}
