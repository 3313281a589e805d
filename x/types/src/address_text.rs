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
#[allow(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "evaluated at compile time: an index out of range fails the build"
)]
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

#[allow(
    clippy::indexing_slicing,
    reason = "the index is masked to 0..32, the table's length"
)]
const fn polymod_step(checksum: u32, value: u8) -> u32 {
    ((checksum & 0x1ff_ffff) << 5) ^ value as u32 ^ GENERATOR_XOR[((checksum >> 25) & 31) as usize]
}

/// The checksum state after the expanded prefix: high bits of each character, a zero, low
/// bits of each character.
#[allow(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "only called to compute PREFIX_CHECKSUM at compile time"
)]
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

/// The charset character of a five-bit group.
fn charset(group: u32) -> u8 {
    let index = usize::try_from(group & 31).unwrap_or(0);
    BECH32_CHARSET.get(index).copied().unwrap_or(b'q')
}

/// The bech32 text of `bytes` with the `gpu` prefix, as ASCII.
pub(crate) fn bech32(bytes: &[u8; ADDRESS_LEN]) -> [u8; BECH32_LEN] {
    let mut out = [0u8; BECH32_LEN];
    // BECH32_LEN is exactly the characters written below; the tests compare every byte
    // with the reference encoder.
    let mut slots = out.iter_mut();
    let mut put = |c: u8| {
        if let Some(slot) = slots.next() {
            *slot = c;
        }
    };
    ADDRESS_HRP.bytes().for_each(&mut put);
    put(b'1');
    let mut checksum = PREFIX_CHECKSUM;
    // `acc` keeps the bits not yet written in its low `bits` bits (at most 12).
    let (mut acc, mut bits) = (0u32, 0u32);
    for &byte in bytes {
        acc = (acc & 0xf).wrapping_shl(8) | u32::from(byte);
        bits = bits.wrapping_add(8);
        while let Some(rest) = bits.checked_sub(5) {
            bits = rest;
            let group = acc.wrapping_shr(bits) & 31;
            checksum = polymod_step(checksum, group as u8);
            put(charset(group));
        }
    }
    for _ in 0..CHECKSUM_LEN {
        checksum = polymod_step(checksum, 0);
    }
    checksum ^= 1;
    for shift in [25, 20, 15, 10, 5, 0] {
        put(charset(checksum.wrapping_shr(shift)));
    }
    out
}

/// Appends the lower-case hex of `bytes` to `out`.
pub(crate) fn push_hex(out: &mut String, bytes: &[u8]) {
    out.reserve(bytes.len().saturating_mul(2));
    for &b in bytes {
        for nibble in [b >> 4, b & 15] {
            out.push(char::from(
                HEX.get(usize::from(nibble)).copied().unwrap_or(b'0'),
            ));
        }
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
