//! Decompressed ed25519 public keys by their 32 bytes. Parsing a key (point decompression)
//! costs about as much as verifying a signature in a batch, and the same accounts sign
//! block after block, so the parsed keys are kept. A pure function's cache: it never
//! changes a result, only how fast it comes.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

use gpuchain_tx::signature::PublicKey;

/// Keys kept before the cache starts over (about 10 MB).
const CAPACITY: usize = 100_000;

fn cache() -> &'static Mutex<BTreeMap<[u8; 32], PublicKey>> {
    static CACHE: OnceLock<Mutex<BTreeMap<[u8; 32], PublicKey>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(BTreeMap::new()))
}

/// The parsed key, or `None` when the bytes are not a valid point.
pub(crate) fn public_key(bytes: &[u8; 32]) -> Option<PublicKey> {
    let mut keys = cache().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(key) = keys.get(bytes) {
        return Some(*key);
    }
    let key = PublicKey::from_bytes(bytes)?;
    if keys.len() >= CAPACITY {
        keys.clear();
    }
    keys.insert(*bytes, key);
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_keys_equal_freshly_parsed_ones_and_bad_points_stay_bad() {
        let sk = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
        let bytes = sk.verifying_key().to_bytes();
        assert_eq!(public_key(&bytes), PublicKey::from_bytes(&bytes));
        assert!(public_key(&bytes).is_some());
        assert_eq!(
            public_key(&bytes),
            PublicKey::from_bytes(&bytes),
            "from the cache"
        );
        let mut bad = [0u8; 32];
        bad[31] = 0x80; // not a point on the curve for most such encodings
        assert_eq!(public_key(&bad), PublicKey::from_bytes(&bad));
    }
}
