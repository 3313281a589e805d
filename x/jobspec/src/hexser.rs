//! Serde helper: a 32-byte hash as a lowercase hex string in JSON.

use serde::{de::Error as _, Deserialize, Deserializer, Serializer};

pub(crate) fn serialize<S: Serializer>(bytes: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&hex::encode(bytes))
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
    let text = String::deserialize(d)?;
    let mut out = [0u8; 32];
    hex::decode_to_slice(text.trim(), &mut out)
        .map_err(|e| D::Error::custom(format!("blake3 must be 64 hex characters: {e}")))?;
    Ok(out)
}
