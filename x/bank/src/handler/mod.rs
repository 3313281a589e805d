//! One file per message. `check_stateless` is pure; `execute` runs on a fork of state and
//! does every stateful check itself (no time-of-check/time-of-use gap).

mod multi_send;
mod send;

use gpuchain_types::{Address, StateWrite};

use crate::{BankError, BankMsg, BankParams};

/// Checks that need no state beyond the module parameters, which `params` reads only for
/// the messages that have limits (a plain send, the common case, has none).
pub fn check_stateless(
    msg: &BankMsg,
    params: impl FnOnce() -> BankParams,
) -> Result<(), BankError> {
    match msg {
        BankMsg::Send(m) => send::check_stateless(m),
        BankMsg::MultiSend(m) => multi_send::check_stateless(m, &params()),
    }
}

/// Executes `msg` signed by `signer`.
pub fn execute(
    state: &mut impl StateWrite,
    signer: &Address,
    msg: &BankMsg,
) -> Result<(), BankError> {
    match msg {
        BankMsg::Send(m) => send::execute(state, signer, m),
        BankMsg::MultiSend(m) => multi_send::execute(state, signer, m),
    }
}

#[cfg(test)]
mod tests;
