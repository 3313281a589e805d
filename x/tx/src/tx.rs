use borsh::{BorshDeserialize, BorshSerialize};
use ed25519_dalek::{Signer, SigningKey};
use gpuchain_types::{Address, Amount};
use serde::{Deserialize, Serialize};

use crate::signature::{self, PublicKey};
use crate::{Msg, TxError};

/// Prefix of the bytes that are signed, so a signature over a gpuchain body can never be
/// replayed as a signature over anything else.
pub const SIGN_DOMAIN: &[u8] = b"gpuchain/tx/v1\0";

/// What the signer authorises.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct TxBody {
    /// Must equal the chain's id.
    pub chain_id: String,
    /// The signer's next nonce: 0 for its first transaction, then +1 each time.
    pub nonce: u64,
    /// ugpu paid to the fee pool whether or not the messages succeed.
    pub fee: Amount,
    /// Gas the signer allows; the fee must cover it at the minimum gas price.
    pub gas_limit: u64,
    /// Executed in order, all or nothing.
    pub msgs: Vec<Msg>,
    /// Free text.
    pub memo: String,
}

/// A signed transaction.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct Tx {
    /// What is authorised.
    pub body: TxBody,
    /// ed25519 public key of the signer.
    pub public_key: [u8; 32],
    /// ed25519 signature over [`sign_bytes`] of the body.
    pub signature: [u8; 64],
}

/// `SIGN_DOMAIN || borsh(body)`: the exact bytes the ed25519 signature covers.
pub fn sign_bytes(body: &TxBody) -> Vec<u8> {
    let mut out = SIGN_DOMAIN.to_vec();
    // Serialising into a Vec cannot fail for these types.
    let _ = BorshSerialize::serialize(body, &mut out);
    out
}

impl Tx {
    /// Signs `body` with `key`.
    pub fn sign(body: TxBody, key: &SigningKey) -> Tx {
        let signature = key.sign(&sign_bytes(&body)).to_bytes();
        Tx {
            body,
            public_key: key.verifying_key().to_bytes(),
            signature,
        }
    }

    /// Decodes a transaction; trailing bytes are an error.
    pub fn decode(bytes: &[u8]) -> Result<Tx, TxError> {
        borsh::from_slice(bytes).map_err(|e| TxError::Decode(e.to_string()))
    }

    /// The borsh encoding.
    pub fn encode(&self) -> Vec<u8> {
        borsh::to_vec(self).unwrap_or_default()
    }

    /// The signer's account.
    pub fn signer(&self) -> Address {
        Address::from_public_key(&self.public_key)
    }

    /// Checks the signature alone, by the chain's rule ([`crate::signature`]).
    pub fn verify_signature(&self) -> Result<(), TxError> {
        let key = PublicKey::from_bytes(&self.public_key).ok_or(TxError::BadSignature)?;
        if signature::verify(&key, &sign_bytes(&self.body), &self.signature) {
            Ok(())
        } else {
            Err(TxError::BadSignature)
        }
    }
}

#[cfg(test)]
mod tests {
    use gpuchain_bank::{BankMsg, MsgSend};

    use super::*;

    fn body() -> TxBody {
        TxBody {
            chain_id: "gpuchain-test".into(),
            nonce: 0,
            fee: 100,
            gas_limit: 10_000,
            msgs: vec![Msg::Bank(BankMsg::Send(MsgSend {
                to: Address([9; 20]),
                amount: 5,
            }))],
            memo: String::new(),
        }
    }

    #[test]
    fn signed_tx_round_trips_and_verifies() {
        let key = SigningKey::from_bytes(&[1; 32]);
        let tx = Tx::sign(body(), &key);
        let decoded = Tx::decode(&tx.encode()).unwrap();
        assert_eq!(decoded, tx);
        decoded.verify_signature().unwrap();
    }

    #[test]
    fn tampered_body_or_trailing_bytes_are_rejected() {
        let key = SigningKey::from_bytes(&[1; 32]);
        let mut tx = Tx::sign(body(), &key);
        let mut bytes = tx.encode();
        bytes.push(0);
        assert!(matches!(Tx::decode(&bytes), Err(TxError::Decode(_))));
        tx.body.fee += 1;
        assert_eq!(tx.verify_signature(), Err(TxError::BadSignature));
    }
}
