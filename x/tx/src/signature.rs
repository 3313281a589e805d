//! The chain's rule for a transaction signature, and its batch form.
//!
//! A signature `(R, s)` by key `A` over message `M` is valid when `s` is a canonical scalar,
//! `R` and `A` decode to curve points, and `[8]([s]B - [k]A - R)` is the identity, with
//! `k = SHA-512(R ‖ A ‖ M) mod ℓ` (RFC 8032's cofactored equation). The cofactor is what lets
//! a batch decide exactly what the signatures one by one would: a batch of valid signatures
//! always passes, and one that holds a signature the single check refuses fails unless the
//! batch's 128-bit coefficients hit a 2⁻¹²⁸ chance. So a transaction is valid or not on its
//! own, whichever transactions share its batch, its block or a node's mempool, and CheckTx
//! may batch what reaches it while every block is judged the same on every node.
//!
//! The cofactorless equation that ed25519-dalek's `verify` checks has no batch form with
//! that property: a signer can put a small-order component into `R` that the single check
//! refuses and a batch accepts or not depending on its random coefficients.
//!
//! Every honestly made RFC 8032 signature passes either equation. No one but the signer can
//! make a second valid signature for the same transaction: changing `R`'s bytes changes
//! `k`, and a canonical `s` is the only one for a given `R` and `k`.

// Scalars are reduced mod ℓ and points stay on the curve after every operation: this
// arithmetic cannot overflow, which is what the lint guards against.
#![allow(clippy::arithmetic_side_effects)]

use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{IsIdentity, VartimeMultiscalarMul};
use sha2::{Digest, Sha512};

/// A decoded public key: its bytes (hashed into every challenge) and its point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublicKey {
    bytes: [u8; 32],
    point: EdwardsPoint,
}

impl PublicKey {
    /// Decodes a key; `None` when the bytes are not a curve point.
    pub fn from_bytes(bytes: &[u8; 32]) -> Option<PublicKey> {
        let point = CompressedEdwardsY(*bytes).decompress()?;
        Some(PublicKey {
            bytes: *bytes,
            point,
        })
    }

    /// The encoded key.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.bytes
    }
}

/// A signature's parts, decoded and with its challenge computed: what both checks need.
struct Decoded {
    r: EdwardsPoint,
    s: Scalar,
    k: Scalar,
}

fn decode(key: &PublicKey, message: &[u8], signature: &[u8; 64]) -> Option<Decoded> {
    let (r_bytes, s_bytes) = signature.split_at(32);
    let r_bytes: [u8; 32] = r_bytes.try_into().ok()?;
    let s_bytes: [u8; 32] = s_bytes.try_into().ok()?;
    let s = Option::<Scalar>::from(Scalar::from_canonical_bytes(s_bytes))?;
    let r = CompressedEdwardsY(r_bytes).decompress()?;
    let mut hash = Sha512::new();
    hash.update(r_bytes);
    hash.update(key.bytes);
    hash.update(message);
    let k = Scalar::from_bytes_mod_order_wide(&hash.finalize().into());
    Some(Decoded { r, s, k })
}

/// Checks one signature.
pub fn verify(key: &PublicKey, message: &[u8], signature: &[u8; 64]) -> bool {
    let Some(d) = decode(key, message, signature) else {
        return false;
    };
    // [s]B - [k]A
    let sb_minus_ka = EdwardsPoint::vartime_double_scalar_mul_basepoint(&d.k, &-key.point, &d.s);
    (sb_minus_ka - d.r).mul_by_cofactor().is_identity()
}

/// One signature of a batch.
#[derive(Clone, Copy, Debug)]
pub struct Item<'a> {
    /// The signer's key.
    pub key: &'a PublicKey,
    /// The signed bytes.
    pub message: &'a [u8],
    /// `R ‖ s`.
    pub signature: &'a [u8; 64],
}

/// Checks every signature at once: true exactly when [`verify`] accepts each of them (but
/// for a 2⁻¹²⁸ chance of passing a batch that holds a bad one). An empty batch passes.
///
/// Each signature's equation is weighted by a 128-bit coefficient drawn from a hash of the
/// whole batch, so the result is a function of the batch alone, and the signatures of one
/// key share one point in the sum: the same accounts sign many transactions of a block.
pub fn verify_batch(items: &[Item<'_>]) -> bool {
    if items.is_empty() {
        return true;
    }
    let mut transcript = blake3::Hasher::new_derive_key("gpuchain tx signature batch v1");
    for item in items {
        transcript.update(&item.key.bytes);
        transcript.update(item.signature);
        transcript.update(blake3::hash(item.message).as_bytes());
    }
    let mut coefficients = transcript.finalize_xof();

    let mut basepoint_scalar = Scalar::ZERO;
    let mut scalars: Vec<Scalar> =
        Vec::with_capacity(items.len().saturating_mul(2).saturating_add(1));
    let mut points: Vec<EdwardsPoint> =
        Vec::with_capacity(items.len().saturating_mul(2).saturating_add(1));
    // A key's coefficient, by the key's position in `scalars`/`points`, found by its bytes.
    let mut key_slot: std::collections::BTreeMap<[u8; 32], usize> = Default::default();
    for item in items {
        let Some(d) = decode(item.key, item.message, item.signature) else {
            return false;
        };
        let mut z_bytes = [0u8; 16];
        coefficients.fill(&mut z_bytes);
        let z = Scalar::from(u128::from_le_bytes(z_bytes));
        // Σ z·(R + [k]A - [s]B) = 0, multiplied by the cofactor below.
        basepoint_scalar -= z * d.s;
        scalars.push(z);
        points.push(d.r);
        let zk = z * d.k;
        match key_slot
            .get(&item.key.bytes)
            .and_then(|&slot| scalars.get_mut(slot))
        {
            Some(scalar) => *scalar += zk,
            None => {
                key_slot.insert(item.key.bytes, scalars.len());
                scalars.push(zk);
                points.push(item.key.point);
            }
        }
    }
    scalars.push(basepoint_scalar);
    points.push(ED25519_BASEPOINT_POINT);
    EdwardsPoint::vartime_multiscalar_mul(&scalars, &points)
        .mul_by_cofactor()
        .is_identity()
}

#[cfg(test)]
mod tests {
    use ed25519_dalek::{Signer, SigningKey};

    use super::*;

    fn signed(seed: u8, message: &[u8]) -> (PublicKey, [u8; 64]) {
        let key = SigningKey::from_bytes(&[seed; 32]);
        let public = PublicKey::from_bytes(&key.verifying_key().to_bytes()).unwrap();
        (public, key.sign(message).to_bytes())
    }

    #[test]
    fn honest_signatures_pass_alone_and_in_a_batch_and_any_changed_byte_fails() {
        let (key, sig) = signed(1, b"pay 5");
        assert!(verify(&key, b"pay 5", &sig));
        assert!(!verify(&key, b"pay 6", &sig));
        for i in 0..64 {
            let mut bad = sig;
            bad[i] ^= 0x01;
            assert!(!verify(&key, b"pay 5", &bad), "byte {i}");
        }
        let (other, _) = signed(2, b"");
        assert!(!verify(&other, b"pay 5", &sig));
        let items = [Item {
            key: &key,
            message: b"pay 5",
            signature: &sig,
        }];
        assert!(verify_batch(&items));
        assert!(verify_batch(&[]));
    }

    #[test]
    fn a_non_canonical_s_is_refused_though_it_names_the_same_scalar() {
        let (key, sig) = signed(3, b"m");
        // s + ℓ: the same residue, a different encoding.
        let s = Scalar::from_canonical_bytes(sig[32..].try_into().unwrap()).unwrap();
        let ell: [u8; 32] = [
            0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9,
            0xde, 0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
        ];
        let mut sum = [0u8; 32];
        let mut carry = 0u16;
        for i in 0..32 {
            let v = u16::from(s.as_bytes()[i]) + u16::from(ell[i]) + carry;
            sum[i] = v as u8;
            carry = v >> 8;
        }
        let mut bad = sig;
        bad[32..].copy_from_slice(&sum);
        assert!(!verify(&key, b"m", &bad));
        let items = [Item {
            key: &key,
            message: b"m",
            signature: &bad,
        }];
        assert!(!verify_batch(&items));
    }
}
