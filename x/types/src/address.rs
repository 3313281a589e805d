use std::fmt;
use std::str::FromStr;

use borsh::{BorshDeserialize, BorshSerialize};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::address_text;

/// Human-readable prefix of every account address.
pub const ADDRESS_HRP: &str = "gpu";
/// Length in bytes of an address: the first 20 bytes of blake3(public key).
pub const ADDRESS_LEN: usize = 20;

/// An account address: the first 20 bytes of blake3 of an ed25519 public key, or of a
/// module name for module accounts. Displayed as bech32 with the `gpu` prefix.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, BorshSerialize, BorshDeserialize, Default,
)]
pub struct Address(pub [u8; ADDRESS_LEN]);

/// Why a string is not a valid address.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AddressError {
    /// Not bech32 at all.
    #[error("address {0:?} is not valid bech32: {1}")]
    Bech32(String, String),
    /// Bech32, but not ours.
    #[error("address {0:?} has prefix {1:?}, expected {ADDRESS_HRP:?}")]
    WrongPrefix(String, String),
    /// Bech32 with our prefix, but the wrong payload length.
    #[error("address {0:?} carries {1} bytes, expected {ADDRESS_LEN}")]
    WrongLength(String, usize),
}

impl Address {
    /// The address of an ed25519 public key.
    pub fn from_public_key(public_key: &[u8; 32]) -> Self {
        Self::from_hash_prefix(blake3::hash(public_key).as_bytes())
    }

    /// The address of a module account, e.g. `module("fee_pool")`. No private key exists
    /// for it: only the module's code can move its funds.
    pub fn module(name: &str) -> Self {
        let mut hasher = blake3::Hasher::new();
        hasher.update(b"gpuchain/module/");
        hasher.update(name.as_bytes());
        Self::from_hash_prefix(hasher.finalize().as_bytes())
    }

    fn from_hash_prefix(hash: &[u8; 32]) -> Self {
        let mut out = [0u8; ADDRESS_LEN];
        out.copy_from_slice(&hash[..ADDRESS_LEN]);
        Address(out)
    }

    /// Lower-case hex of the 20 bytes, used in state keys.
    pub fn to_hex(&self) -> String {
        let mut out = String::with_capacity(2 * ADDRESS_LEN);
        address_text::push_hex(&mut out, &self.0);
        out
    }

    /// The bech32 text (`gpu1...`), in a string of exactly its length: events render
    /// several addresses per transaction, and `to_string` would grow the string through
    /// the formatter.
    pub fn to_bech32(&self) -> String {
        let text = address_text::bech32(&self.0);
        // The encoder emits only the prefix, '1' and charset characters: always ASCII.
        String::from_utf8_lossy(&text).into_owned()
    }

    /// The state key `prefix` followed by this address in hex, e.g.
    /// `"bank/accounts/" + hex`.
    pub fn key_under(&self, prefix: &str) -> String {
        let mut out = String::with_capacity(prefix.len().saturating_add(2 * ADDRESS_LEN));
        out.push_str(prefix);
        address_text::push_hex(&mut out, &self.0);
        out
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = address_text::bech32(&self.0);
        // The encoder emits only the prefix, '1' and charset characters: always ASCII.
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for Address {
    type Err = AddressError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (hrp, data) =
            bech32::decode(s).map_err(|e| AddressError::Bech32(s.to_string(), e.to_string()))?;
        if hrp.as_str() != ADDRESS_HRP {
            return Err(AddressError::WrongPrefix(s.to_string(), hrp.to_string()));
        }
        let bytes: [u8; ADDRESS_LEN] = data
            .as_slice()
            .try_into()
            .map_err(|_| AddressError::WrongLength(s.to_string(), data.len()))?;
        Ok(Address(bytes))
    }
}

impl Serialize for Address {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Address {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = <String as Deserialize>::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use bech32::{Bech32, Hrp};

    use super::*;

    #[test]
    fn bech32_round_trips_and_rejects_foreign_prefixes() {
        let addr = Address::from_public_key(&[7u8; 32]);
        let text = addr.to_string();
        assert!(text.starts_with("gpu1"), "{text}");
        assert_eq!(text.parse::<Address>(), Ok(addr));
        assert_eq!(addr.to_bech32(), text);
        assert_eq!(addr.to_bech32().capacity(), text.len());
        let foreign = bech32::encode::<Bech32>(Hrp::parse_unchecked("cosmos"), &addr.0).unwrap();
        assert!(matches!(
            foreign.parse::<Address>(),
            Err(AddressError::WrongPrefix(..))
        ));
        assert!(matches!(
            "gpu1qqqq".parse::<Address>(),
            Err(AddressError::Bech32(..))
        ));
    }

    #[test]
    fn module_addresses_differ_from_each_other() {
        assert_ne!(Address::module("fee_pool"), Address::module("escrow"));
    }
}
