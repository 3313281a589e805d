//! Text forms of an [`Address`](crate::Address) on the hot path: lower-case hex for state
//! keys and bech32 (BIP-173) for events and output. Every transaction renders several of
//! each, and the general-purpose encoders (`hex`, the `bech32` crate) allocate and iterate
//! per character; these write the fixed-size forms straight into a buffer. Decoding stays
//! with the `bech32` crate.

use crate::address::{ADDRESS_HRP, ADDRESS_LEN};

const HEX: &[u8; 16] = b"0123456789abcdef";
const BECH32_CHARSET: &[u8; 32] = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l";
const BECH32_GENERATOR: [u32; 5] = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];
/// Five-bit groups in 20 bytes (160 bits, no padding).
const DATA_GROUPS: usize = ADDRESS_LEN * 8 / 5;
const CHECKSUM_LEN: usize = 6;
/// Characters of a bech32 address: prefix, separator, data, checksum.
pub(crate) const BECH32_LEN: usize = ADDRESS_HRP.len() + 1 + DATA_GROUPS + CHECKSUM_LEN;

/// For each value of the checksum's top five bits, the XOR of the generators they select:
/// one table lookup per character instead of five conditional XORs.
const GENERATOR_XOR: [u32; 32] = {
    let mut table = [0u32; 32];
    let mut top = 0;
    while top < 32 {
        let mut i = 0;
        while i < 5 {
            if (top >> i) & 1 == 1 {
                table[top] ^= BECH32_GENERATOR[i];
            }
            i += 1;
        }
        top += 1;
    }
    table
};

const fn polymod_step(checksum: u32, value: u8) -> u32 {
    ((checksum & 0x1ff_ffff) << 5) ^ value as u32 ^ GENERATOR_XOR[(checksum >> 25) as usize]
}

/// The checksum state after the expanded prefix: high bits of each character, a zero, low
/// bits of each character.
const fn prefix_checksum() -> u32 {
    let hrp = ADDRESS_HRP.as_bytes();
    let mut checksum = 1;
    let mut i = 0;
    while i < hrp.len() {
        checksum = polymod_step(checksum, hrp[i] >> 5);
        i += 1;
    }
    checksum = polymod_step(checksum, 0);
    i = 0;
    while i < hrp.len() {
        checksum = polymod_step(checksum, hrp[i] & 31);
        i += 1;
    }
    checksum
}

const PREFIX_CHECKSUM: u32 = prefix_checksum();

/// The bech32 text of `bytes` with the `gpu` prefix, as ASCII.
pub(crate) fn bech32(bytes: &[u8; ADDRESS_LEN]) -> [u8; BECH32_LEN] {
    let mut out = [0u8; BECH32_LEN];
    let hrp = ADDRESS_HRP.len();
    out[..hrp].copy_from_slice(ADDRESS_HRP.as_bytes());
    out[hrp] = b'1';
    let mut checksum = PREFIX_CHECKSUM;
    let (mut acc, mut bits, mut at) = (0u32, 0u32, hrp + 1);
    for &byte in bytes {
        acc = (acc << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            let group = ((acc >> bits) & 31) as u8;
            checksum = polymod_step(checksum, group);
            out[at] = BECH32_CHARSET[group as usize];
            at += 1;
        }
    }
    for _ in 0..CHECKSUM_LEN {
        checksum = polymod_step(checksum, 0);
    }
    checksum ^= 1;
    for i in 0..CHECKSUM_LEN {
        let group = (checksum >> (5 * (CHECKSUM_LEN - 1 - i))) & 31;
        out[at] = BECH32_CHARSET[group as usize];
        at += 1;
    }
    out
}

/// Appends the lower-case hex of `bytes` to `out`.
pub(crate) fn push_hex(out: &mut String, bytes: &[u8]) {
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 15)] as char);
    }
}

#[cfg(test)]
mod tests {
    use bech32::{Bech32, Hrp};

    use super::*;

    #[test]
    fn matches_the_reference_encoders_for_many_addresses() {
        for i in 0u32..2_000 {
            let hash = blake3::hash(&i.to_le_bytes());
            let bytes: [u8; ADDRESS_LEN] = hash.as_bytes()[..ADDRESS_LEN].try_into().unwrap();
            let reference =
                bech32::encode::<Bech32>(Hrp::parse_unchecked(ADDRESS_HRP), &bytes).unwrap();
            assert_eq!(std::str::from_utf8(&bech32(&bytes)).unwrap(), reference);
            let mut hex_text = String::from("k/");
            push_hex(&mut hex_text, &bytes);
            assert_eq!(hex_text, format!("k/{}", hex::encode(bytes)));
        }
        for edge in [[0u8; ADDRESS_LEN], [0xff; ADDRESS_LEN]] {
            let reference =
                bech32::encode::<Bech32>(Hrp::parse_unchecked(ADDRESS_HRP), &edge).unwrap();
            assert_eq!(std::str::from_utf8(&bech32(&edge)).unwrap(), reference);
        }
    }
}
