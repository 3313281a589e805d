//! Prints the test vectors of docs/protocol.md (the `protocol_vectors` test checks them).

use ed25519_dalek::SigningKey;
use gpuchain_bank::{BankMsg, MsgSend};
use gpuchain_tx::{sign_bytes, Msg, Tx, TxBody};
use gpuchain_types::Address;

fn main() {
    let key = SigningKey::from_bytes(&[1u8; 32]);
    let body = TxBody {
        chain_id: "gpuchain-1".into(),
        nonce: 7,
        fee: 250,
        gas_limit: 25_000,
        msgs: vec![Msg::Bank(BankMsg::Send(MsgSend {
            to: Address([0x22; 20]),
            amount: 1_000_000,
        }))],
        memo: "hello".into(),
    };
    let tx = Tx::sign(body.clone(), &key);
    let v = serde_json::json!({
        "secret_key": hex::encode([1u8; 32]),
        "public_key": hex::encode(tx.public_key),
        "address": tx.signer().to_string(),
        "recipient": Address([0x22; 20]).to_string(),
        "fee_pool": Address::module("fee_pool").to_string(),
        "body_borsh": hex::encode(borsh::to_vec(&body).unwrap()),
        "sign_bytes": hex::encode(sign_bytes(&body)),
        "signature": hex::encode(tx.signature),
        "tx": hex::encode(tx.encode()),
    });
    println!("{}", serde_json::to_string_pretty(&v).unwrap());
}
