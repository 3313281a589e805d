//! Malformed and adversarial transactions: garbage, truncations, forged signatures, the wrong
//! chain, too small a fee, the same nonce spent twice, replays.

use gpuchain_bank::{BankMsg, MsgSend};
use gpuchain_tx::build_signed_tx;
use gpuchain_tx::{Msg, Tx};

use super::{Gen, Planned};

fn small_send(g: &mut Gen<'_>) -> Msg {
    let to = g.any_actor();
    Msg::Bank(BankMsg::Send(MsgSend {
        to: g.addr(to),
        amount: u128::from(g.rng.range(1, 1_000)),
    }))
}

/// A valid transaction that is not counted against the signer's nonce.
fn valid_unsent(g: &mut Gen<'_>) -> Tx {
    let who = g.any_actor();
    let msg = small_send(g);
    g.unsent_tx(who, vec![msg])
}

/// Random bytes.
pub(super) fn garbage_bytes(g: &mut Gen<'_>) -> Planned {
    let len = usize::try_from(g.rng.below(300)).unwrap_or(0);
    Planned::Txs(vec![g.rng.bytes(len)])
}

/// A valid transaction cut short.
pub(super) fn truncated(g: &mut Gen<'_>) -> Planned {
    let mut raw = valid_unsent(g).encode();
    let keep = usize::try_from(g.rng.below(raw.len() as u64)).unwrap_or(0);
    raw.truncate(keep);
    Planned::Txs(vec![raw])
}

/// A valid transaction with one signature bit flipped.
pub(super) fn bad_signature(g: &mut Gen<'_>) -> Planned {
    let mut tx = valid_unsent(g);
    let i = usize::try_from(g.rng.below(64)).unwrap_or(0);
    if let Some(b) = tx.signature.get_mut(i) {
        *b ^= 1 << g.rng.below(8);
    }
    Planned::Txs(vec![tx.encode()])
}

/// Signed for another chain.
pub(super) fn wrong_chain_id(g: &mut Gen<'_>) -> Planned {
    let who = g.any_actor();
    let msg = small_send(g);
    let nonce = g.nonce(who);
    let Some(actor) = g.world.actors.get(who) else {
        return Planned::NoOp;
    };
    let tx = build_signed_tx(
        &actor.key,
        "other-chain",
        nonce,
        &g.world.params,
        vec![msg],
        "",
    );
    Planned::Txs(vec![tx.encode()])
}

/// Re-signed with a fee below the minimum for its gas limit.
pub(super) fn fee_too_low(g: &mut Gen<'_>) -> Planned {
    let who = g.any_actor();
    let msg = small_send(g);
    let mut body = g.unsent_tx(who, vec![msg]).body;
    body.fee = g.world.params.min_fee(body.gas_limit).saturating_sub(1);
    let Some(actor) = g.world.actors.get(who) else {
        return Planned::NoOp;
    };
    Planned::Txs(vec![Tx::sign(body, &actor.key).encode()])
}

/// Two different transfers with the same nonce: at most one may pass.
pub(super) fn double_spend_nonce(g: &mut Gen<'_>) -> Planned {
    let who = g.any_actor();
    let (a, b) = (small_send(g), small_send(g));
    let first = g.unsent_tx(who, vec![a]).encode();
    let second = g.tx(who, vec![b]);
    Planned::Txs(vec![first, second])
}

/// An already included transaction sent again.
pub(super) fn replay(g: &mut Gen<'_>) -> Planned {
    match g.rng.pick(&g.world.old_txs).cloned() {
        Some(raw) => Planned::Txs(vec![raw]),
        None => Planned::NoOp,
    }
}
