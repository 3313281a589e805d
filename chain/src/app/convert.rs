//! Conversions between the app's results and ABCI messages, and proposal checks.

use bytes::Bytes;
use gpuchain_slashing::{Evidence, EvidenceKind};
use gpuchain_staking::{ConsensusAddress, ValidatorUpdate};
use gpuchain_tx::{Tx, TxParams};
use gpuchain_types::Event;
use tendermint_proto::v0_38::abci::{
    self as abci, ExecTxResult, ResponseCheckTx, ResponseFinalizeBlock, ResponseProcessProposal,
};
use tendermint_proto::v0_38::crypto::{public_key, PublicKey};

use super::{BlockOutcome, TxResult};

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn event(e: Event) -> abci::Event {
    abci::Event {
        r#type: e.kind.into_owned(),
        attributes: e
            .attributes
            .into_iter()
            .map(|(key, value)| abci::EventAttribute {
                key: key.into_owned(),
                value,
                index: true,
            })
            .collect(),
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
) -> ResponseFinalizeBlock {
    ResponseFinalizeBlock {
        events: outcome.events.into_iter().map(event).collect(),
        tx_results: outcome
            .tx_results
            .into_iter()
            .map(|r| ExecTxResult {
                code: r.code,
                log: r.log,
                codespace: r.codespace,
                gas_wanted: to_i64(r.gas_wanted),
                gas_used: to_i64(r.gas_used),
                events: r.events.into_iter().map(event).collect(),
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
