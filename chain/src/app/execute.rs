//! Deterministic execution of transactions and blocks, independent of ABCI and storage:
//! FinalizeBlock, CheckTx, the simulator and the benchmarks all run this code.

use gpuchain_slashing::Evidence;
use gpuchain_staking::{ConsensusAddress, ValidatorUpdate};
use gpuchain_tx::signature::{self, PublicKey};
use gpuchain_tx::{Tx, TxError, TxParams};
use gpuchain_types::{
    AppError, BlockCtx, Event, EventSink, ModuleError, Overlay, StateRead, StateReadExt,
    StateWriteExt, Write,
};

use super::ante;
use super::known_signatures::KnownSignatures;
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

/// One transaction's signature by the chain's rule ([`gpuchain_tx::signature`]), with the
/// signer's key parsed once per account instead of once per transaction.
pub(super) fn signature_ok(tx: &Tx) -> bool {
    super::keycache::public_key(&tx.public_key).is_some_and(|key| {
        signature::verify(&key, &gpuchain_tx::sign_bytes(&tx.body), &tx.signature)
    })
}

/// Below this many signatures a batch costs more than checking them one by one.
const MIN_BATCH: usize = 3;

/// Each transaction's signature verdict, the same [`signature_ok`] gives it alone: one batch
/// when every signature passes, one by one when the batch holds a bad one. The rule's batch
/// decides exactly what the single checks would, so the verdicts do not depend on which
/// transactions share the call.
fn verify_signatures(txs: &[&Tx]) -> Vec<bool> {
    if txs.len() < MIN_BATCH {
        return txs.iter().map(|tx| signature_ok(tx)).collect();
    }
    let keys: Vec<Option<PublicKey>> = txs
        .iter()
        .map(|tx| super::keycache::public_key(&tx.public_key))
        .collect();
    let messages: Vec<Vec<u8>> = txs
        .iter()
        .map(|tx| gpuchain_tx::sign_bytes(&tx.body))
        .collect();
    let items: Vec<signature::Item<'_>> = txs
        .iter()
        .zip(&keys)
        .zip(&messages)
        .filter_map(|((tx, key), message)| {
            key.as_ref().map(|key| signature::Item {
                key,
                message,
                signature: &tx.signature,
            })
        })
        .collect();
    if signature::verify_batch(&items) {
        return keys.iter().map(Option::is_some).collect();
    }
    txs.iter()
        .zip(&keys)
        .zip(&messages)
        .map(|((tx, key), message)| {
            key.as_ref()
                .is_some_and(|key| signature::verify(key, message, &tx.signature))
        })
        .collect()
}

/// Each transaction's signature verdict: `false` for one that did not decode, `true` for one
/// `checked_before` marks (its bytes' signature was found valid already), and
/// [`verify_signatures`]' verdict, all the others checked together, for the rest.
pub(super) fn signature_verdicts(
    decoded: &[Result<Tx, TxError>],
    checked_before: &[bool],
) -> Vec<bool> {
    let to_verify: Vec<&Tx> = decoded
        .iter()
        .zip(checked_before)
        .filter_map(|(tx, before)| tx.as_ref().ok().filter(|_| !before))
        .collect();
    let mut verdicts = verify_signatures(&to_verify).into_iter();
    decoded
        .iter()
        .zip(checked_before)
        .map(|(tx, before)| match tx {
            Err(_) => false,
            Ok(_) if *before => true,
            Ok(_) => verdicts.next().unwrap_or(false),
        })
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
    execute_block_knowing(base, start, input, upgrades, None)
}

/// [`execute_block`], taking the signatures `known` holds as checked (a node's CheckTx
/// verdicts): the same outcome, with fewer signatures to check.
pub(super) fn execute_block_knowing(
    base: &dyn StateRead,
    start: Write,
    input: &BlockInput<'_>,
    upgrades: &Upgrades,
    known: Option<&KnownSignatures>,
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
    let known_valid: Vec<bool> = decoded
        .iter()
        .zip(input.txs)
        .map(|(tx, raw)| tx.is_ok() && known.is_some_and(|k| k.take(raw)))
        .collect();
    let signatures_ok = signature_verdicts(&decoded, &known_valid);
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
