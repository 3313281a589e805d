//! The mempool and proposal half of ABCI, called exactly as CometBFT calls it: CheckTx for
//! every submitted transaction, PrepareProposal to pick the block, ProcessProposal to vote on
//! it. FinalizeBlock and Commit go through [`gpuchain_chain::App::finalize`] and
//! [`gpuchain_chain::App::commit`], the same functions the ABCI handlers wrap.

use bytes::Bytes;
use gpuchain_chain::App;
use tendermint_abci::Application;
use tendermint_proto::v0_38::abci::{
    response_process_proposal::ProposalStatus, RequestCheckTx, RequestPrepareProposal,
    RequestProcessProposal,
};

/// CometBFT's default `max_tx_bytes` for a block (22020096 in its config).
const MAX_BLOCK_TX_BYTES: i64 = 22_020_096;

/// CheckTx's code for `raw` (0 = admitted to the mempool).
pub fn check_tx(app: &App, raw: &[u8]) -> u32 {
    Application::check_tx(
        app,
        RequestCheckTx {
            tx: Bytes::copy_from_slice(raw),
            r#type: 0,
        },
    )
    .code
}

/// PrepareProposal over `candidates`; returns the transactions it keeps, in order.
pub fn prepare(app: &App, height: u64, candidates: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let resp = Application::prepare_proposal(
        app,
        RequestPrepareProposal {
            max_tx_bytes: MAX_BLOCK_TX_BYTES,
            txs: candidates
                .iter()
                .map(|t| Bytes::copy_from_slice(t))
                .collect(),
            height: i64::try_from(height).unwrap_or(i64::MAX),
            ..Default::default()
        },
    );
    resp.txs.into_iter().map(|t| t.to_vec()).collect()
}

/// Whether ProcessProposal accepts `txs`.
pub fn process(app: &App, height: u64, hash: &[u8], txs: &[Vec<u8>]) -> bool {
    let resp = Application::process_proposal(
        app,
        RequestProcessProposal {
            txs: txs.iter().map(|t| Bytes::copy_from_slice(t)).collect(),
            hash: Bytes::copy_from_slice(hash),
            height: i64::try_from(height).unwrap_or(i64::MAX),
            ..Default::default()
        },
    );
    resp.status == ProposalStatus::Accept as i32
}
