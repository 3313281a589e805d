//! Conversions between the app's results and ABCI messages, and proposal checks.

use std::collections::BTreeSet;

use bytes::Bytes;
use gpuchain_slashing::{Evidence, EvidenceKind};
use gpuchain_staking::{ConsensusAddress, ValidatorUpdate};
use gpuchain_tx::{Tx, TxParams};
use gpuchain_types::Event;
use tendermint_proto::google::protobuf::Timestamp;
use tendermint_proto::v0_38::abci::{
    self as abci, ExecTxResult, ResponseCheckTx, ResponseFinalizeBlock, ResponseProcessProposal,
};
use tendermint_proto::v0_38::crypto::{public_key, PublicKey};

use super::{BlockOutcome, TxResult};

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Which event attributes a node asks CometBFT to index (app.toml `index_events`). The
/// flag is not part of any hash, so nodes may differ.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventIndex {
    /// `"kind"` or `"kind.attribute"` entries.
    names: BTreeSet<String>,
}

impl EventIndex {
    /// Indexes the events (`"kind"`) and attributes (`"kind.attribute"`) named.
    pub fn new(names: impl IntoIterator<Item = String>) -> Self {
        EventIndex {
            names: names.into_iter().collect(),
        }
    }

    fn indexes(&self, kind: &str, key: &str) -> bool {
        self.names.contains(kind)
            || self.names.iter().any(|n| {
                n.strip_prefix(kind)
                    .and_then(|rest| rest.strip_prefix('.'))
                    .is_some_and(|attr| attr == key)
            })
    }
}

/// `index`: `None` indexes every attribute.
fn event(e: Event, index: Option<&EventIndex>) -> abci::Event {
    let kind = e.kind.into_owned();
    let attributes = e
        .attributes
        .into_iter()
        .map(|(key, value)| abci::EventAttribute {
            index: index.is_none_or(|i| i.indexes(&kind, &key)),
            key: key.into_owned(),
            value,
        })
        .collect();
    abci::Event {
        r#type: kind,
        attributes,
    }
}

pub(super) fn check_tx_response(r: TxResult) -> ResponseCheckTx {
    ResponseCheckTx {
        code: r.code,
        log: r.log,
        codespace: r.codespace,
        gas_wanted: to_i64(r.gas_wanted),
        gas_used: to_i64(r.gas_used),
        ..Default::default()
    }
}

pub(super) fn finalize_response(
    outcome: BlockOutcome,
    app_hash: [u8; 32],
    index: Option<&EventIndex>,
) -> ResponseFinalizeBlock {
    ResponseFinalizeBlock {
        events: outcome
            .events
            .into_iter()
            .map(|e| event(e, index))
            .collect(),
        tx_results: outcome
            .tx_results
            .into_iter()
            .map(|r| ExecTxResult {
                code: r.code,
                log: r.log,
                codespace: r.codespace,
                gas_wanted: to_i64(r.gas_wanted),
                gas_used: to_i64(r.gas_used),
                events: r.events.into_iter().map(|e| event(e, index)).collect(),
                ..Default::default()
            })
            .collect(),
        validator_updates: outcome
            .validator_updates
            .iter()
            .map(validator_update)
            .collect(),
        app_hash: app_hash.to_vec().into(),
        ..Default::default()
    }
}

pub(super) fn validator_update(u: &ValidatorUpdate) -> abci::ValidatorUpdate {
    abci::ValidatorUpdate {
        pub_key: Some(PublicKey {
            sum: Some(public_key::Sum::Ed25519(u.pubkey.to_vec())),
        }),
        power: to_i64(u.power),
    }
}

fn consensus_address(validator: Option<&abci::Validator>) -> Option<ConsensusAddress> {
    validator.and_then(|v| v.address.as_ref().try_into().ok())
}

/// CometBFT-verified evidence; entries with a malformed address are skipped.
pub(super) fn misbehavior(list: &[abci::Misbehavior]) -> Vec<Evidence> {
    list.iter()
        .filter_map(|m| {
            let kind = match abci::MisbehaviorType::try_from(m.r#type) {
                Ok(abci::MisbehaviorType::DuplicateVote) => EvidenceKind::DuplicateVote,
                Ok(abci::MisbehaviorType::LightClientAttack) => EvidenceKind::LightClientAttack,
                _ => return None,
            };
            Some(Evidence {
                kind,
                consensus_address: consensus_address(m.validator.as_ref())?,
                height: u64::try_from(m.height).ok()?,
            })
        })
        .collect()
}

/// The block time of a FinalizeBlock request in ms since the Unix epoch. CometBFT always
/// sends one; a missing, negative or out-of-range time is an error.
pub(super) fn time_ms(time: Option<&Timestamp>) -> Result<u64, String> {
    let time = time.ok_or("FinalizeBlock carries no block time")?;
    let secs = u64::try_from(time.seconds)
        .map_err(|_| format!("block time {} s is before 1970", time.seconds))?;
    let millis = u64::try_from(time.nanos)
        .ok()
        .filter(|n| *n < 1_000_000_000)
        .ok_or_else(|| format!("block time has {} ns", time.nanos))?
        / 1_000_000;
    secs.checked_mul(1_000)
        .and_then(|ms| ms.checked_add(millis))
        .ok_or_else(|| format!("block time {secs} s is out of range"))
}

/// Who signed the last block. A nil vote counts as signed: the validator was online.
pub(super) fn votes(info: Option<&abci::CommitInfo>) -> Vec<(ConsensusAddress, bool)> {
    let absent = tendermint_proto::v0_38::types::BlockIdFlag::Absent as i32;
    info.map(|c| {
        c.votes
            .iter()
            .filter_map(|v| {
                Some((
                    consensus_address(v.validator.as_ref())?,
                    v.block_id_flag != absent,
                ))
            })
            .collect()
    })
    .unwrap_or_default()
}

/// Gas a transaction claims, or `None` if it is not a decodable transaction.
fn claimed_gas(raw: &[u8], params: &TxParams) -> Option<u64> {
    if raw.len() > params.max_tx_bytes as usize {
        return None;
    }
    Tx::decode(raw).ok().map(|tx| tx.body.gas_limit)
}

/// PrepareProposal: keeps mempool order, drops undecodable transactions, stops at the byte
/// and block-gas limits.
pub(super) fn select_txs(txs: Vec<Bytes>, max_tx_bytes: i64, params: &TxParams) -> Vec<Bytes> {
    let mut bytes: i64 = 0;
    let mut gas: u64 = 0;
    let mut out = Vec::new();
    for tx in txs {
        let Some(tx_gas) = claimed_gas(&tx, params) else {
            continue;
        };
        let size = i64::try_from(tx.len()).unwrap_or(i64::MAX);
        let (Some(b), Some(g)) = (bytes.checked_add(size), gas.checked_add(tx_gas)) else {
            break;
        };
        if b > max_tx_bytes || g > params.max_block_gas {
            break;
        }
        bytes = b;
        gas = g;
        out.push(tx);
    }
    out
}

/// ProcessProposal: a proposal with an undecodable transaction or over the block gas limit
/// is rejected; individual transaction failures are left to FinalizeBlock.
pub(super) fn process_proposal(txs: &[Bytes], params: &TxParams) -> ResponseProcessProposal {
    let mut gas: u64 = 0;
    let mut ok = true;
    for tx in txs {
        match claimed_gas(tx, params).and_then(|g| gas.checked_add(g)) {
            Some(g) if g <= params.max_block_gas => gas = g,
            _ => {
                ok = false;
                break;
            }
        }
    }
    let status = if ok {
        abci::response_process_proposal::ProposalStatus::Accept
    } else {
        abci::response_process_proposal::ProposalStatus::Reject
    };
    ResponseProcessProposal {
        status: status as i32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_time_is_read_in_milliseconds_and_a_bad_one_is_refused() {
        let at = |seconds, nanos| time_ms(Some(&Timestamp { seconds, nanos }));
        assert_eq!(at(1_764_547_200, 999_999_999), Ok(1_764_547_200_999));
        assert_eq!(at(0, 0), Ok(0));
        assert!(time_ms(None).unwrap_err().contains("no block time"));
        assert!(at(-1, 0).unwrap_err().contains("before 1970"));
        assert!(at(1, -1).is_err());
        assert!(at(1, 1_000_000_000).is_err());
        assert!(at(i64::MAX, 0).unwrap_err().contains("out of range"));
    }

    fn indexed(index: Option<&EventIndex>) -> Vec<(String, String, bool)> {
        let outcome = BlockOutcome {
            writes: Default::default(),
            tx_results: vec![TxResult {
                code: 0,
                codespace: String::new(),
                log: String::new(),
                gas_wanted: 0,
                gas_used: 0,
                events: vec![
                    Event::new("message")
                        .attr("action", "bank.send")
                        .attr("sender", "gpu1a"),
                    Event::new("bank.transfer")
                        .attr("from", "gpu1a")
                        .attr("to", "gpu1b")
                        .attr("amount", 5),
                ],
            }],
            events: vec![Event::new("staking.validator_set_changed").attr("power", 0)],
            validator_updates: vec![],
        };
        let response = finalize_response(outcome, [0; 32], index);
        response
            .tx_results
            .iter()
            .flat_map(|r| r.events.iter())
            .chain(response.events.iter())
            .flat_map(|e| {
                e.attributes
                    .iter()
                    .map(|a| (e.r#type.clone(), a.key.clone(), a.index))
            })
            .collect()
    }

    #[test]
    fn only_the_configured_events_and_attributes_are_indexed() {
        assert!(indexed(None).iter().all(|(_, _, i)| *i), "default: all");
        let none = EventIndex::new([]);
        assert!(indexed(Some(&none)).iter().all(|(_, _, i)| !*i));
        let some = EventIndex::new(["bank.transfer".to_string(), "message.sender".into()]);
        let flags: Vec<(String, bool)> = indexed(Some(&some))
            .into_iter()
            .map(|(kind, key, i)| (format!("{kind}.{key}"), i))
            .collect();
        assert_eq!(
            flags,
            [
                ("message.action", false),
                ("message.sender", true),
                ("bank.transfer.from", true),
                ("bank.transfer.to", true),
                ("bank.transfer.amount", true),
                ("staking.validator_set_changed.power", false),
            ]
            .map(|(k, i)| (k.to_string(), i))
        );
        // A prefix of an event's name is not the event.
        let partial = EventIndex::new(["bank".to_string(), "message.send".into()]);
        assert!(indexed(Some(&partial)).iter().all(|(_, _, i)| !*i));
    }
}
