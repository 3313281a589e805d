//! Microseconds per signature under the chain's rule, alone and in batches of each size,
//! against ed25519-dalek's own batch (the ed25519 ceiling) on the same signatures.
//!
//!   cargo run --example signature_batch_cost [-- --keys 100 --rounds 15]
//!
//! Each size runs `rounds` times, the sides alternating; it prints the median and the
//! min–max of each side and the load average before the first run. Run it on an idle
//! machine.

#![allow(clippy::disallowed_types, clippy::disallowed_methods)] // a benchmark, not consensus code

use std::time::Instant;

use ed25519_dalek::{Signer, SigningKey};
use gpuchain_tx::signature::{self, Item, PublicKey};

const SIZES: [usize; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 512];

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| v.parse().expect("a number"))
}

struct Signed {
    key: PublicKey,
    dalek_key: ed25519_dalek::VerifyingKey,
    message: Vec<u8>,
    signature: [u8; 64],
}

fn median_and_range(mut samples: Vec<f64>) -> (f64, f64, f64) {
    samples.sort_by(f64::total_cmp);
    (
        samples[samples.len() / 2],
        samples[0],
        samples[samples.len() - 1],
    )
}

fn main() {
    let keys = arg("--keys", 100);
    let rounds = arg("--rounds", 15);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "load before: {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let signers: Vec<SigningKey> = (0..keys)
        .map(|i| SigningKey::from_bytes(&blake3::hash(&i.to_le_bytes()).into()))
        .collect();
    let largest = SIZES[SIZES.len() - 1];
    // A transfer's sign bytes are about 150 bytes.
    let signed: Vec<Signed> = (0..largest)
        .map(|i| {
            let signer = &signers[i % keys];
            let message = [&i.to_le_bytes()[..], &[7u8; 142]].concat();
            let dalek_key = signer.verifying_key();
            Signed {
                key: PublicKey::from_bytes(&dalek_key.to_bytes()).expect("a valid key"),
                dalek_key,
                signature: signer.sign(&message).to_bytes(),
                message,
            }
        })
        .collect();

    println!("| signatures | chain's rule, µs a signature | ed25519-dalek batch, µs a signature | ratio |");
    println!("|---|---|---|---|");
    for &size in &SIZES {
        let batch = &signed[..size];
        // Enough repetitions for a run of some tens of milliseconds.
        let reps = (4096 / size).max(8);
        let mut ours = Vec::with_capacity(rounds);
        let mut dalek = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let start = Instant::now();
            for _ in 0..reps {
                let ok = if size == 1 {
                    signature::verify(&batch[0].key, &batch[0].message, &batch[0].signature)
                } else {
                    let items: Vec<Item<'_>> = batch
                        .iter()
                        .map(|s| Item {
                            key: &s.key,
                            message: &s.message,
                            signature: &s.signature,
                        })
                        .collect();
                    signature::verify_batch(&items)
                };
                assert!(ok);
            }
            ours.push(start.elapsed().as_secs_f64() * 1e6 / (reps * size) as f64);

            let start = Instant::now();
            for _ in 0..reps {
                let messages: Vec<&[u8]> = batch.iter().map(|s| s.message.as_slice()).collect();
                let signatures: Vec<ed25519_dalek::Signature> = batch
                    .iter()
                    .map(|s| ed25519_dalek::Signature::from_bytes(&s.signature))
                    .collect();
                let dalek_keys: Vec<ed25519_dalek::VerifyingKey> =
                    batch.iter().map(|s| s.dalek_key).collect();
                ed25519_dalek::verify_batch(&messages, &signatures, &dalek_keys)
                    .expect("a valid batch");
            }
            dalek.push(start.elapsed().as_secs_f64() * 1e6 / (reps * size) as f64);
        }
        let (o, o_min, o_max) = median_and_range(ours);
        let (d, d_min, d_max) = median_and_range(dalek);
        println!(
            "| {size} | {o:.1} ({o_min:.1}–{o_max:.1}) | {d:.1} ({d_min:.1}–{d_max:.1}) | {:.2} |",
            o / d
        );
    }
}
