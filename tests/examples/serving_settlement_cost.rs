//! The chain's cost of settling served requests: for 10,000 answered requests acknowledged
//! in batches of B, the claim transactions (one per batch, signed and encoded exactly as the
//! provider agent sends them), their bytes and gas, and the expected reveal transactions of
//! the audited claims (one receipt with its proof and both bodies per audited claim, at the
//! default audit chance). Sizes, not timings: the figures are the same on any machine.
//!
//! `cargo run --example serving_settlement_cost`

use ed25519_dalek::{Signer, SigningKey};
use gpuchain_serving::receipt::{merkle_proof, BatchAck, Receipt};
use gpuchain_serving::{MsgClaimServing, MsgRevealReceipt, ServingMsg, ServingParams};
use gpuchain_tx::{build_signed_tx, intrinsic_gas, Msg, TxParams};

const REQUESTS: u64 = 10_000;

fn receipt(seq: u64) -> Receipt {
    Receipt {
        lease_id: 12,
        seq,
        request_hash: *blake3::hash(&seq.to_le_bytes()).as_bytes(),
        response_hash: *blake3::hash(&(seq + 1).to_le_bytes()).as_bytes(),
        units: 300,
    }
}

fn main() {
    let params = TxParams::default();
    let serving = ServingParams::default();
    let client = SigningKey::from_bytes(&[1; 32]);
    let provider = SigningKey::from_bytes(&[2; 32]);
    // A typical chat exchange: a 600-byte request, a 1,200-byte answer record.
    let (request, response) = (vec![b'q'; 600], vec![b'a'; 1_200]);
    println!(
        "| batch | claims per 10,000 requests | bytes per claim | claim bytes | gas per claim | expected reveals | reveal bytes | total bytes | bytes per request |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for batch in [1u64, 16, 64, 256, 1_024] {
        let receipts: Vec<Receipt> = (0..batch).map(receipt).collect();
        let ack = BatchAck::of("gpuchain-1", 12, 0, batch, &receipts).expect("a batch");
        let claim = Msg::Serving(ServingMsg::Claim(MsgClaimServing {
            lease_id: 12,
            first_seq: 0,
            end_seq: batch,
            count: batch,
            units: ack.units,
            root: ack.root,
            client_key: client.verifying_key().to_bytes(),
            client_signature: client.sign(&ack.sign_bytes()).to_bytes(),
        }));
        let tx = build_signed_tx(
            &provider,
            "gpuchain-1",
            7,
            &params,
            vec![claim],
            "gpuchain-provider",
        );
        let bytes = tx.encode().len() as u64;
        let gas = intrinsic_gas(&params, bytes as usize, &tx.body);
        let leaves: Vec<[u8; 32]> = receipts.iter().map(Receipt::leaf).collect();
        let reveal = Msg::Serving(ServingMsg::Reveal(MsgRevealReceipt {
            claim_id: 1,
            receipt: receipts[receipts.len() / 2].clone(),
            proof: merkle_proof(&leaves, receipts.len() / 2).expect("a proof"),
            request: request.clone(),
            response: response.clone(),
        }));
        let reveal_tx = build_signed_tx(
            &provider,
            "gpuchain-1",
            8,
            &params,
            vec![reveal],
            "gpuchain-provider",
        );
        let reveal_bytes = reveal_tx.encode().len() as u64;
        let claims = REQUESTS.div_ceil(batch);
        let reveals = claims as f64 * f64::from(serving.audit_ppm) / 1e6;
        let total = (claims * bytes) as f64 + reveals * reveal_bytes as f64;
        println!(
            "| {batch} | {claims} | {bytes} | {} | {gas} | {reveals:.1} | {reveal_bytes} | {total:.0} | {:.2} |",
            claims * bytes,
            total / REQUESTS as f64
        );
    }
}
