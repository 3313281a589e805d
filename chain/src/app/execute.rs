//! Deterministic execution of transactions and blocks, independent of ABCI and storage:
//! FinalizeBlock, CheckTx, the simulator and the benchmarks all run this code.

use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use gpuchain_slashing::Evidence;
use gpuchain_staking::{ConsensusAddress, ValidatorUpdate};
use gpuchain_tx::{Tx, TxError, TxParams};
use gpuchain_types::{
    AppError, BlockCtx, Event, EventSink, ModuleError, Overlay, StateRead, StateReadExt,
    StateWriteExt, Write,
};

use super::ante;
use super::layered::{Layered, LayeredMut};
use super::modules::{self, MODULES};
use super::upgrade::Upgrades;
use crate::state_key;

/// The result of one transaction, as reported to CometBFT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxResult {
    /// 0 on success.
    pub code: u32,
    /// Module of the error.
    pub codespace: String,
    /// Readable explanation.
    pub log: String,
    /// Declared gas limit.
    pub gas_wanted: u64,
    /// Gas charged.
    pub gas_used: u64,
    /// Events, only for transactions that were admitted.
    pub events: Vec<Event>,
}

impl TxResult {
    fn rejected(e: impl ModuleError) -> TxResult {
        let e = AppError::from_module(&e);
        TxResult {
            code: e.code,
            codespace: e.codespace,
            log: e.log,
            gas_wanted: 0,
            gas_used: 0,
            events: vec![],
        }
    }
}

/// A block to execute.
pub struct BlockInput<'a> {
    /// Height.
    pub height: u64,
    /// Block hash from CometBFT; its blake3 seeds on-chain randomness.
    pub hash: &'a [u8],
    /// Block time from the header, ms since the Unix epoch ([`BlockCtx::time_ms`]).
    pub time_ms: u64,
    /// Raw transactions in block order.
    pub txs: &'a [&'a [u8]],
    /// Misbehaviour evidence CometBFT verified and included.
    pub misbehavior: &'a [Evidence],
    /// Who signed the previous block: (consensus address, signed).
    pub votes: &'a [(ConsensusAddress, bool)],
}

/// What executing a block produced.
pub struct BlockOutcome {
    /// Every state change of the block, in key order.
    pub writes: Write,
    /// One result per transaction, in order.
    pub tx_results: Vec<TxResult>,
    /// Block-level events.
    pub events: Vec<Event>,
    /// Changes to CometBFT's validator set (power 0 removes).
    pub validator_updates: Vec<ValidatorUpdate>,
}

/// Reads the chain id and transaction parameters from state.
pub(crate) fn chain_settings(state: &dyn StateRead) -> (String, TxParams) {
    let chain_id: String = state.get(state_key::chain_id()).unwrap_or_default();
    let params: TxParams = state.get(state_key::tx_params()).unwrap_or_default();
    (chain_id, params)
}

/// Runs one transaction on top of `base + top`, appending its writes to `top` if admitted.
/// `signature_ok` says whether the caller verified the signature (singly or in a batch).
pub(crate) fn run_tx(
    base: &dyn StateRead,
    top: &mut Write,
    ctx: &BlockCtx,
    params: &TxParams,
    raw: &[u8],
    decoded: Result<&Tx, &TxError>,
    signature_ok: bool,
) -> TxResult {
    if raw.len() > params.max_tx_bytes as usize {
        return TxResult::rejected(TxError::TooLarge {
            size: raw.len(),
            max: params.max_tx_bytes,
        });
    }
    let tx = match decoded {
        Ok(tx) => tx,
        Err(e) => return TxResult::rejected(e.clone()),
    };
    let gas_used = match ante::check_stateless(tx, raw.len(), params, &ctx.chain_id) {
        Ok(gas) => gas,
        Err(e) => return TxResult::rejected(e),
    };
    if !signature_ok {
        return TxResult::rejected(TxError::BadSignature);
    }
    let signer = tx.signer();
    // The ante handler writes nothing unless it succeeds, so it writes straight into `top`.
    let mut ante_state = LayeredMut {
        top,
        base,
        events: Vec::new(),
    };
    if let Err(e) = ante::charge(&mut ante_state, tx, &signer) {
        return TxResult::rejected(e);
    }
    let mut events = ante_state.events;
    let signer_text = signer.to_bech32();
    events.push(
        Event::new("tx")
            .attr_text("signer", signer_text.clone())
            .attr("fee", tx.body.fee),
    );

    let outcome = {
        let layered = Layered { top, base };
        let mut fork = Overlay::new(&layered);
        let result = tx.body.msgs.iter().try_for_each(|msg| {
            fork.emit(
                Event::new("message")
                    .attr("action", msg.name())
                    .attr_text("sender", signer_text.clone()),
            );
            modules::route(&mut fork, ctx, &signer, msg)
        });
        result.map(|()| fork.into_parts())
    };
    let mut result = TxResult {
        code: 0,
        codespace: String::new(),
        log: String::new(),
        gas_wanted: tx.body.gas_limit,
        gas_used,
        events: Vec::new(),
    };
    match outcome {
        Ok((writes, msg_events)) => {
            top.extend(writes);
            events.extend(msg_events);
        }
        Err(e) => {
            result.code = e.code;
            result.codespace = e.codespace;
            result.log = e.log;
        }
    }
    result.events = events;
    result
}

/// One transaction's signature, verified alone as [`Tx::verify_signature`] does, with the
/// signer's key parsed once per account instead of once per transaction.
pub(super) fn signature_ok(tx: &Tx) -> bool {
    super::keycache::verifying_key(&tx.public_key).is_some_and(|key| {
        key.verify(
            &gpuchain_tx::sign_bytes(&tx.body),
            &Signature::from_bytes(&tx.signature),
        )
        .is_ok()
    })
}

/// Verifies every decoded signature, in one batch when all are valid.
fn verify_signatures(txs: &[Result<Tx, TxError>]) -> Vec<bool> {
    let mut messages = Vec::new();
    let mut signatures: Vec<Signature> = Vec::new();
    let mut keys: Vec<VerifyingKey> = Vec::new();
    let mut parsed = vec![false; txs.len()];
    for (tx, parsed) in txs.iter().zip(parsed.iter_mut()) {
        if let Ok(tx) = tx {
            if let Some(key) = super::keycache::verifying_key(&tx.public_key) {
                messages.push(gpuchain_tx::sign_bytes(&tx.body));
                signatures.push(Signature::from_bytes(&tx.signature));
                keys.push(key);
                *parsed = true;
            }
        }
    }
    let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
    if ed25519_dalek::verify_batch(&refs, &signatures, &keys).is_ok() {
        return parsed;
    }
    // Some signature is bad: find which, one by one.
    txs.iter()
        .map(|tx| matches!(tx, Ok(tx) if signature_ok(tx)))
        .collect()
}

/// Executes a block on top of `base` (plus `start`, the pending genesis writes if any). An
/// error here is a broken invariant in module code, never a user error: the node must halt.
pub fn execute_block(
    base: &dyn StateRead,
    start: Write,
    input: &BlockInput<'_>,
    upgrades: &Upgrades,
) -> Result<BlockOutcome, AppError> {
    let mut writes = start;
    let (chain_id, _) = chain_settings(&Layered { top: &writes, base });
    let ctx = BlockCtx {
        height: input.height,
        chain_id,
        entropy: *blake3::hash(input.hash).as_bytes(),
        time_ms: input.time_ms,
    };
    // A migration runs before the block's transactions, which see what it changed.
    let mut events = super::upgrade::begin_block(base, &mut writes, &ctx, upgrades)?;
    let (_, params) = chain_settings(&Layered { top: &writes, base });
    let decoded: Vec<Result<Tx, TxError>> = input
        .txs
        .iter()
        .map(|raw| {
            if raw.len() > params.max_tx_bytes as usize {
                Err(TxError::TooLarge {
                    size: raw.len(),
                    max: params.max_tx_bytes,
                })
            } else {
                Tx::decode(raw)
            }
        })
        .collect();
    let signatures_ok = verify_signatures(&decoded);
    let tx_results = input
        .txs
        .iter()
        .zip(decoded.iter().zip(signatures_ok))
        .map(|(raw, (tx, sig_ok))| {
            run_tx(base, &mut writes, &ctx, &params, raw, tx.as_ref(), sig_ok)
        })
        .collect();
    let (end_events, validator_updates) = end_block(base, &mut writes, &ctx, input)?;
    events.extend(end_events);
    Ok(BlockOutcome {
        writes,
        tx_results,
        events,
        validator_updates,
    })
}

/// Work done once per block after the transactions: evidence, liveness, the validator set.
fn end_block(
    base: &dyn StateRead,
    writes: &mut Write,
    ctx: &BlockCtx,
    input: &BlockInput<'_>,
) -> Result<(Vec<Event>, Vec<ValidatorUpdate>), AppError> {
    let layered = Layered { top: writes, base };
    let mut fork = Overlay::new(&layered);
    let mut updates = Vec::new();
    for module in &MODULES {
        updates.extend((module.end_block)(&mut fork, ctx, input)?);
    }
    fork.put(state_key::height().to_string(), &ctx.height);
    let (w, events) = fork.into_parts();
    writes.extend(w);
    Ok((events, updates))
}
