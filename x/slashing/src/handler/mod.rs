//! One file per message. `check_stateless` is pure; `execute` runs on a fork of state and
//! does every stateful check itself before its first write.

mod unjail;

use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::{SlashingError, SlashingMsg};

/// Checks that need no state.
pub fn check_stateless(msg: &SlashingMsg) -> Result<(), SlashingError> {
    match msg {
        SlashingMsg::Unjail(_) => Ok(()),
    }
}

/// Executes `msg` signed by `signer` in the block described by `ctx`.
pub fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &SlashingMsg,
) -> Result<(), SlashingError> {
    match msg {
        SlashingMsg::Unjail(_) => unjail::execute(state, ctx, signer),
    }
}

#[cfg(test)]
mod tests;
