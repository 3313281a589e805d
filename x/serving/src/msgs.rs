use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_types::Amount;
use serde::{Deserialize, Serialize};

use crate::receipt::Receipt;
use crate::ModelRef;

/// Opens a serving order and locks `deposit`.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgOpenServing {
    /// The model.
    pub model: ModelRef,
    /// How many providers, 1..=`max_providers`.
    pub providers: u32,
    /// Ceiling price per unit block (a million tokens, a thousand inputs), ugpu.
    pub max_price: Amount,
    /// Blocks the leases serve.
    pub duration_blocks: u64,
    /// Bids are taken for this many blocks after the opening block.
    pub bid_window_blocks: u64,
    /// Locked in escrow; claims are paid from it.
    pub deposit: Amount,
    /// Only providers of this region, if set.
    pub region: Option<String>,
}

/// Bids `price` per unit block on a serving order.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgBidServing {
    /// Order.
    pub order_id: u64,
    /// Asked price.
    pub price: Amount,
    /// Where the provider will answer the lease's requests: its OpenAI API base URL
    /// (`http://host:port`), which the client's gateway reads from the lease.
    pub endpoint: String,
}

/// Claims payment for an acknowledged batch of receipts.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgClaimServing {
    /// Lease.
    pub lease_id: u64,
    /// First request number covered (the lease's next).
    pub first_seq: u64,
    /// One past the last request number covered.
    pub end_seq: u64,
    /// Receipts in the batch.
    pub count: u64,
    /// Their units.
    pub units: u128,
    /// Their Merkle root.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub root: [u8; 32],
    /// The client's public key.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub client_key: [u8; 32],
    /// The client's signature over the [`crate::receipt::BatchAck`] of the above.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub client_signature: [u8; 64],
}

/// Ends the signer's order now (before it clears: refund at once).
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgEndServing {
    /// Order.
    pub order_id: u64,
}

/// The client says a lease's provider stopped answering.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgReportUnresponsive {
    /// Lease.
    pub lease_id: u64,
}

/// The provider answers a report: it is alive.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgServingHeartbeat {
    /// Lease.
    pub lease_id: u64,
}

/// Reveals a claim's drawn receipt with its proof and bodies.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgRevealReceipt {
    /// Claim.
    pub claim_id: u64,
    /// The drawn receipt.
    pub receipt: Receipt,
    /// Its Merkle proof in the claim's batch.
    #[serde(with = "hex_list")]
    pub proof: Vec<[u8; 32]>,
    /// The request body.
    pub request: Vec<u8>,
    /// The response body.
    pub response: Vec<u8>,
}

/// A drawn verifier's verdict on a revealed receipt.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgServingVerdict {
    /// Claim.
    pub claim_id: u64,
    /// `true`: the response is the model's answer to the request, within tolerance.
    pub honest: bool,
}

/// Appeals a claim's standing verdict: signed by the party it goes against (the client of
/// an `honest` verdict, the provider of a `faulty` one), within the appeal window, locking
/// the appeal deposit.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgAppealServing {
    /// Claim.
    pub claim_id: u64,
}

/// A drawn verifier that cannot judge a revealed receipt (its model is not one the verifier
/// runs) steps down before its deadline: let go without a slash or a fee, and the next
/// juror drawn; a recusal is not one of the claim's `max_jury_draws`, and a verifier
/// recuses once a claim (never drawn again for it). Signed by the assigned verifier.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgServingRecuse {
    /// Claim.
    pub claim_id: u64,
}

/// The serving models a verifier judges, by the blake3 of their weights: it replaces what the
/// verifier declared before (an empty list withdraws it). Juries for a claim are drawn only
/// among verifiers that declared its model, and an order for a model no eligible verifier
/// declared is refused. Signed by a registered verifier; at most
/// [`crate::MAX_JUDGED_MODELS`], each once.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgServingModels {
    /// blake3 of each model's weights file.
    #[serde(with = "hex_list")]
    pub models: Vec<[u8; 32]>,
}

/// Every serving message. The borsh variant index is part of the wire format.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServingMsg {
    /// Variant 0.
    Open(MsgOpenServing),
    /// Variant 1.
    Bid(MsgBidServing),
    /// Variant 2.
    Claim(MsgClaimServing),
    /// Variant 3.
    End(MsgEndServing),
    /// Variant 4.
    Report(MsgReportUnresponsive),
    /// Variant 5.
    Heartbeat(MsgServingHeartbeat),
    /// Variant 6.
    Reveal(MsgRevealReceipt),
    /// Variant 7.
    Verdict(MsgServingVerdict),
    /// Variant 8.
    Appeal(MsgAppealServing),
    /// Variant 9.
    Recuse(MsgServingRecuse),
    /// Variant 10.
    Models(MsgServingModels),
}

impl ServingMsg {
    /// `serving.<message>`, for logs and events.
    pub fn name(&self) -> &'static str {
        match self {
            ServingMsg::Open(_) => "serving.open",
            ServingMsg::Bid(_) => "serving.bid",
            ServingMsg::Claim(_) => "serving.claim",
            ServingMsg::End(_) => "serving.end",
            ServingMsg::Report(_) => "serving.report",
            ServingMsg::Heartbeat(_) => "serving.heartbeat",
            ServingMsg::Reveal(_) => "serving.reveal",
            ServingMsg::Verdict(_) => "serving.verdict",
            ServingMsg::Appeal(_) => "serving.appeal",
            ServingMsg::Recuse(_) => "serving.recuse",
            ServingMsg::Models(_) => "serving.models",
        }
    }
}

/// Serde for a list of 32-byte hashes as hex strings.
pub(crate) mod hex_list {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(list: &[[u8; 32]], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(list.iter().map(hex_string))
    }

    /// A hash as 64 lowercase hex digits.
    pub(crate) fn hex_string(bytes: &[u8; 32]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<[u8; 32]>, D::Error> {
        let texts = Vec::<String>::deserialize(d)?;
        texts
            .iter()
            .map(|t| {
                let mut out = [0u8; 32];
                let bytes = t.as_bytes();
                if bytes.len() != 64 {
                    return Err(serde::de::Error::custom("expected 32 bytes of hex"));
                }
                for (o, pair) in out.iter_mut().zip(bytes.chunks(2)) {
                    let text = std::str::from_utf8(pair).map_err(serde::de::Error::custom)?;
                    *o = u8::from_str_radix(text, 16).map_err(serde::de::Error::custom)?;
                }
                Ok(out)
            })
            .collect()
    }
}
