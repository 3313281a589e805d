//! x/bank operations.

use gpuchain_bank::{BankMsg, MsgMultiSend, MsgSend, Output};
use gpuchain_tx::Msg;

use super::{Gen, Planned};

fn send_msg(to: gpuchain_types::Address, amount: u128) -> Msg {
    Msg::Bank(BankMsg::Send(MsgSend { to, amount }))
}

/// A small transfer between two actors.
pub(super) fn send(g: &mut Gen<'_>) -> Planned {
    let (from, to) = (g.any_actor(), g.any_actor());
    let amount = u128::from(g.rng.range(1, 5_000_000));
    let msg = send_msg(g.addr(to), amount);
    Planned::Txs(vec![g.tx(from, vec![msg])])
}

/// One signer pays three actors at once.
pub(super) fn multi_send(g: &mut Gen<'_>) -> Planned {
    let from = g.any_actor();
    let outputs = (0..3)
        .map(|_| {
            let to = g.any_actor();
            Output {
                to: g.addr(to),
                amount: u128::from(g.rng.range(1, 1_000_000)),
            }
        })
        .collect();
    let msg = Msg::Bank(BankMsg::MultiSend(MsgMultiSend { outputs }));
    Planned::Txs(vec![g.tx(from, vec![msg])])
}

/// Sends more than exists (it still pays the fee and uses its nonce).
pub(super) fn send_overdraft(g: &mut Gen<'_>) -> Planned {
    let (from, to) = (g.any_actor(), g.any_actor());
    let msg = send_msg(g.addr(to), u128::MAX);
    Planned::Txs(vec![g.tx(from, vec![msg])])
}
