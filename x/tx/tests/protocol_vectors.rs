//! docs/protocol.md's test vectors are what the code produces.

use ed25519_dalek::SigningKey;
use gpuchain_bank::{BankMsg, MsgSend};
use gpuchain_tx::{intrinsic_gas, sign_bytes, Msg, Tx, TxBody, TxParams};
use gpuchain_types::Address;

fn vectors() -> serde_json::Value {
    let doc = include_str!("../../../docs/protocol.md");
    let start =
        doc.find("```json test-vectors").expect("vector block") + "```json test-vectors".len();
    let end = start + doc[start..].find("```").expect("end of vector block");
    serde_json::from_str(&doc[start..end]).expect("vectors are JSON")
}

#[test]
fn protocol_document_vectors_match_the_code() {
    let v = vectors();
    let field = |k: &str| {
        v[k].as_str()
            .unwrap_or_else(|| panic!("missing {k}"))
            .to_string()
    };
    let secret: [u8; 32] = hex::decode(field("secret_key"))
        .unwrap()
        .try_into()
        .unwrap();
    let key = SigningKey::from_bytes(&secret);
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
    assert_eq!(hex::encode(tx.public_key), field("public_key"));
    assert_eq!(tx.signer().to_string(), field("address"));
    assert_eq!(Address([0x22; 20]).to_string(), field("recipient"));
    assert_eq!(Address::module("fee_pool").to_string(), field("fee_pool"));
    assert_eq!(
        hex::encode(borsh::to_vec(&body).unwrap()),
        field("body_borsh")
    );
    assert_eq!(hex::encode(sign_bytes(&body)), field("sign_bytes"));
    assert_eq!(hex::encode(tx.signature), field("signature"));
    assert_eq!(hex::encode(tx.encode()), field("tx"));
    let decoded = Tx::decode(&hex::decode(field("tx")).unwrap()).unwrap();
    decoded.verify_signature().unwrap();

    // The hash CometBFT names it by, and the gas and minimum fee under default parameters.
    let tx_bytes = tx.encode();
    use sha2::Digest;
    assert_eq!(
        hex::encode_upper(sha2::Sha256::digest(&tx_bytes)),
        field("tx_hash")
    );
    let params = TxParams::default();
    assert_eq!(
        hex::encode(borsh::to_vec(&params).unwrap()),
        field("tx_params_borsh")
    );
    let gas = intrinsic_gas(&params, tx_bytes.len(), &body);
    assert_eq!(Some(gas), v["gas"].as_u64());
    assert_eq!(Some(params.min_fee(gas) as u64), v["min_fee"].as_u64());
}

#[test]
fn no_transaction_pays_less_than_the_economics_check_assumes() {
    // The smallest transaction there is: a one-letter chain id, nonce 0, the shortest
    // message and no memo. Its minimum fee bounds every transaction's from below.
    let key = SigningKey::from_bytes(&[7; 32]);
    let body = TxBody {
        chain_id: "g".into(),
        nonce: 0,
        fee: 0,
        gas_limit: 0,
        msgs: vec![Msg::Auction(gpuchain_auction::AuctionMsg::WithdrawRewards(
            gpuchain_auction::MsgWithdrawRewards {},
        ))],
        memo: String::new(),
    };
    let bytes = Tx::sign(body.clone(), &key).encode();
    let params = TxParams::default();
    let fee = params.min_fee(intrinsic_gas(&params, bytes.len(), &body));
    assert!(
        fee >= gpuchain_verify::economics::MIN_TX_FEE,
        "{} bytes pay {fee} ugpu",
        bytes.len()
    );
}
