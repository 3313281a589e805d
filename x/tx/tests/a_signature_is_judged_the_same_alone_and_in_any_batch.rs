//! The chain's signature rule decides a signature the same alone and in any batch, so a
//! transaction's validity never depends on the transactions beside it in CheckTx or in a
//! block. Checked on honest signatures, forged ones (any changed byte, another message,
//! another key, a non-canonical `s`) and signatures a signer made with small-order
//! components in `R` or in the key, against an independent implementation of the same
//! cofactored rule (ZIP 215, the `ed25519-consensus` crate).
//!
//! Who would profit from a difference: a signer whose transaction some nodes accept and
//! others refuse splits the chain; one whose transaction CheckTx admits and the block then
//! refuses gets block space free.

use curve25519_dalek::constants::{ED25519_BASEPOINT_POINT, EIGHT_TORSION};
use curve25519_dalek::scalar::Scalar;
use ed25519_dalek::{Signer, SigningKey, Verifier};
use gpuchain_tx::signature::{self, Item, PublicKey};
use rand_core::{OsRng, RngCore};
use sha2::{Digest, Sha512};

/// A signature the owner of `seed` makes with the small-order point `EIGHT_TORSION[r_t]`
/// added to its nonce point and `EIGHT_TORSION[a_t]` to its public key.
fn crafted(seed: u8, message: &[u8], r_t: usize, a_t: usize) -> ([u8; 32], [u8; 64]) {
    let a = Scalar::from_bytes_mod_order([seed; 32]);
    let public = (ED25519_BASEPOINT_POINT * a + EIGHT_TORSION[a_t]).compress();
    let nonce =
        Scalar::from_bytes_mod_order_wide(&Sha512::digest([&[seed][..], message].concat()).into());
    let r = (ED25519_BASEPOINT_POINT * nonce + EIGHT_TORSION[r_t]).compress();
    let mut h = Sha512::new();
    h.update(r.as_bytes());
    h.update(public.as_bytes());
    h.update(message);
    let k = Scalar::from_bytes_mod_order_wide(&h.finalize().into());
    let s = nonce + k * a;
    let mut sig = [0u8; 64];
    sig[..32].copy_from_slice(r.as_bytes());
    sig[32..].copy_from_slice(s.as_bytes());
    (public.to_bytes(), sig)
}

/// What ZIP 215 says of the signature.
fn reference(key: &[u8; 32], message: &[u8], sig: &[u8; 64]) -> bool {
    ed25519_consensus::VerificationKey::try_from(*key)
        .and_then(|k| k.verify(&ed25519_consensus::Signature::from(*sig), message))
        .is_ok()
}

fn ours(key: &[u8; 32], message: &[u8], sig: &[u8; 64]) -> bool {
    PublicKey::from_bytes(key).is_some_and(|k| signature::verify(&k, message, sig))
}

struct Case {
    key: [u8; 32],
    message: Vec<u8>,
    sig: [u8; 64],
}

/// Honest, forged and crafted signatures, with what ZIP 215 says of each.
fn cases() -> Vec<(Case, bool)> {
    let mut out = Vec::new();
    for seed in 0..12u8 {
        let signer = SigningKey::from_bytes(&[seed; 32]);
        let message = format!("transfer {seed}").into_bytes();
        let honest = signer.sign(&message).to_bytes();
        let key = signer.verifying_key().to_bytes();
        out.push((
            Case {
                key,
                message: message.clone(),
                sig: honest,
            },
            true,
        ));
        let mut flipped = honest;
        flipped[usize::from(seed) * 5 % 64] ^= 1 << (seed % 8);
        out.push((
            Case {
                key,
                message: message.clone(),
                sig: flipped,
            },
            false,
        ));
        out.push((
            Case {
                key,
                message: b"another message".to_vec(),
                sig: honest,
            },
            false,
        ));
        let (r_t, a_t) = (usize::from(seed) % 8, usize::from(seed / 3) % 8);
        let (key, sig) = crafted(seed, &message, r_t, a_t);
        out.push((Case { key, message, sig }, true));
    }
    out.into_iter()
        .map(|(case, expected)| {
            let zip215 = reference(&case.key, &case.message, &case.sig);
            assert_eq!(zip215, expected, "the cases are what they say");
            (case, zip215)
        })
        .collect()
}

#[test]
fn each_signature_gets_the_verdict_of_the_independent_cofactored_rule() {
    for (i, (case, zip215)) in cases().iter().enumerate() {
        assert_eq!(
            ours(&case.key, &case.message, &case.sig),
            *zip215,
            "case {i}"
        );
    }
    // A non-canonical s (s + ℓ) names the same scalar and is refused by both.
    let signer = SigningKey::from_bytes(&[40; 32]);
    let mut sig = signer.sign(b"m").to_bytes();
    let ell: [u8; 32] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde,
        0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ];
    let mut carry = 0u16;
    for (byte, l) in sig[32..].iter_mut().zip(ell) {
        let v = u16::from(*byte) + u16::from(l) + carry;
        *byte = v as u8;
        carry = v >> 8;
    }
    let key = signer.verifying_key().to_bytes();
    assert!(!ours(&key, b"m", &sig));
    assert!(!reference(&key, b"m", &sig));
}

#[test]
fn a_batch_passes_exactly_when_every_signature_in_it_passes_alone() {
    let cases = cases();
    let keys: Vec<Option<PublicKey>> = cases
        .iter()
        .map(|(c, _)| PublicKey::from_bytes(&c.key))
        .collect();
    let mut rng = OsRng;
    for round in 0..300 {
        // A random subset, in a random order, of 1 to 16 signatures.
        let size = 1 + rng.next_u32() as usize % 16;
        let picked: Vec<usize> = (0..size)
            .map(|_| rng.next_u32() as usize % cases.len())
            .collect();
        let items: Vec<Item<'_>> = picked
            .iter()
            .map(|&i| Item {
                key: keys[i].as_ref().unwrap(),
                message: &cases[i].0.message,
                signature: &cases[i].0.sig,
            })
            .collect();
        let alone = picked.iter().all(|&i| cases[i].1);
        assert_eq!(
            signature::verify_batch(&items),
            alone,
            "round {round}: {picked:?}"
        );
    }
}

#[test]
fn the_cofactorless_check_would_let_a_signers_neighbours_decide_its_fate() {
    // ed25519-dalek's `verify` refuses a signature with a small-order component in R, and
    // its batch accepts or refuses it depending on the coefficients the other signatures
    // draw: the reason the chain's rule is the cofactored one.
    let message = b"pay 10".to_vec();
    let (key, sig) = crafted(90, &message, 4, 0); // EIGHT_TORSION[4]: the point of order 2
    let dalek_key = ed25519_dalek::VerifyingKey::from_bytes(&key).unwrap();
    let dalek_sig = ed25519_dalek::Signature::from_bytes(&sig);
    assert!(dalek_key.verify(&message, &dalek_sig).is_err());
    assert!(ours(&key, &message, &sig));

    let mut verdicts = std::collections::BTreeSet::new();
    for n in 1..=40u8 {
        let neighbour = SigningKey::from_bytes(&[n; 32]);
        let other = neighbour.sign(&[n]);
        let dalek = ed25519_dalek::verify_batch(
            &[&message[..], &[n][..]],
            &[dalek_sig, other],
            &[dalek_key, neighbour.verifying_key()],
        )
        .is_ok();
        verdicts.insert(dalek);
        let ours_key = PublicKey::from_bytes(&key).unwrap();
        let neighbour_key = PublicKey::from_bytes(&neighbour.verifying_key().to_bytes()).unwrap();
        let other = other.to_bytes();
        assert!(signature::verify_batch(&[
            Item {
                key: &ours_key,
                message: &message,
                signature: &sig,
            },
            Item {
                key: &neighbour_key,
                message: &[n],
                signature: &other,
            },
        ]));
    }
    assert_eq!(
        verdicts.len(),
        2,
        "the cofactorless batch both accepted and refused the same signature"
    );
}
