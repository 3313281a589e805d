use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_types::Amount;
use serde::{Deserialize, Serialize};

/// A verifier's finding about a result, compared off-chain with the job kind's tolerance.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// Variant 0: within tolerance of the verifier's re-execution.
    Honest,
    /// Variant 1: beyond tolerance: a wrong result.
    Faulty,
}

impl VerdictKind {
    /// `honest` or `faulty`, for events.
    pub fn name(&self) -> &'static str {
        match self {
            VerdictKind::Honest => "honest",
            VerdictKind::Faulty => "faulty",
        }
    }
}

/// Registers the signer as a verifier with `bond` ≥ `min_verifier_stake`.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgRegisterVerifier {
    /// ugpu to bond.
    pub bond: Amount,
}

/// Adds to the signer's verifier bond.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgBondVerifier {
    /// ugpu.
    pub amount: Amount,
}

/// Starts unbonding part of the signer's verifier bond.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgUnbondVerifier {
    /// ugpu.
    pub amount: Amount,
}

/// The assigned verifier's verdict on a lease.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgSubmitVerdict {
    /// Lease.
    pub lease_id: u64,
    /// blake3 of the verifier's own output.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub output_hash: [u8; 32],
    /// Finding.
    pub verdict: VerdictKind,
}

/// Appeals the first verdict on a lease (provider against `faulty`, client against
/// `honest`), locking `appeal_deposit`.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgAppeal {
    /// Lease.
    pub lease_id: u64,
}

/// Commits a challenge: see [`crate::challenge_commitment`].
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgCommitChallenge {
    /// blake3(domain ‖ poster ‖ expected_output_hash ‖ salt).
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub commitment: [u8; 32],
}

/// Reveals a challenge against the ringer order `order_id`.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgRevealChallenge {
    /// Challenge.
    pub challenge_id: u64,
    /// The ringer order.
    pub order_id: u64,
    /// The committed correct output hash.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub expected_output_hash: [u8; 32],
    /// The committed salt.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub salt: [u8; 32],
}

/// The assigned verifier cannot check the lease's result (its re-run failed, or cannot
/// finish in time) and steps down before its deadline: let go without a slash or a fee,
/// never drawn for the case again, and the round drawn afresh (not counted as the round's
/// reassignment after a miss); with nobody left the case ends as when a miss cannot be
/// reassigned.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgRecuse {
    /// Lease.
    pub lease_id: u64,
}

/// Every verify message. The borsh variant index is part of the wire format.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum VerifyMsg {
    /// Variant 0.
    RegisterVerifier(MsgRegisterVerifier),
    /// Variant 1.
    BondVerifier(MsgBondVerifier),
    /// Variant 2.
    UnbondVerifier(MsgUnbondVerifier),
    /// Variant 3.
    SubmitVerdict(MsgSubmitVerdict),
    /// Variant 4.
    Appeal(MsgAppeal),
    /// Variant 5.
    CommitChallenge(MsgCommitChallenge),
    /// Variant 6.
    RevealChallenge(MsgRevealChallenge),
    /// Variant 7.
    Recuse(MsgRecuse),
}

impl VerifyMsg {
    /// `verify.<message>`, for logs and events.
    pub fn name(&self) -> &'static str {
        match self {
            VerifyMsg::RegisterVerifier(_) => "verify.register_verifier",
            VerifyMsg::BondVerifier(_) => "verify.bond_verifier",
            VerifyMsg::UnbondVerifier(_) => "verify.unbond_verifier",
            VerifyMsg::SubmitVerdict(_) => "verify.submit_verdict",
            VerifyMsg::Appeal(_) => "verify.appeal",
            VerifyMsg::CommitChallenge(_) => "verify.commit_challenge",
            VerifyMsg::RevealChallenge(_) => "verify.reveal_challenge",
            VerifyMsg::Recuse(_) => "verify.recuse",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borsh_variant_index_and_json_tag_are_the_wire_format() {
        let msg = VerifyMsg::SubmitVerdict(MsgSubmitVerdict {
            lease_id: 7,
            output_hash: [1; 32],
            verdict: VerdictKind::Faulty,
        });
        let bytes = borsh::to_vec(&msg).unwrap();
        assert_eq!(bytes.first(), Some(&3));
        assert_eq!(bytes.last(), Some(&1), "faulty is variant 1");
        assert_eq!(bytes.len(), 1 + 8 + 32 + 1);
        let json = serde_json::to_value(&msg).unwrap();
        assert_eq!(json["type"], "submit_verdict");
        assert_eq!(json["verdict"], "faulty");
        assert_eq!(json["output_hash"], hex::encode([1u8; 32]));
        let back: VerifyMsg = serde_json::from_value(json).unwrap();
        assert_eq!(back, msg);
        assert_eq!(msg.name(), "verify.submit_verdict");
        let reveal = VerifyMsg::RevealChallenge(MsgRevealChallenge {
            challenge_id: 1,
            order_id: 2,
            expected_output_hash: [3; 32],
            salt: [4; 32],
        });
        assert_eq!(borsh::to_vec(&reveal).unwrap().first(), Some(&6));
    }
}
