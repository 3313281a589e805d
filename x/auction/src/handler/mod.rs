//! One file per message. `check_stateless` is pure; `execute` runs on a fork of state and
//! does every stateful check itself (no time-of-check/time-of-use gap), before its first
//! write, so a failed message leaves the fork untouched.

mod bid;
mod cancel_order;
mod commit_result;
mod compare_replicas;
mod confirm_receipt;
mod post_order;
mod release_lease;
mod reveal_result;
mod withdraw_rewards;

use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::{AuctionError, AuctionMsg, AuctionParams};

/// Checks that need no state.
pub fn check_stateless(msg: &AuctionMsg, params: &AuctionParams) -> Result<(), AuctionError> {
    match msg {
        AuctionMsg::PostOrder(m) => post_order::check_stateless(m, params),
        AuctionMsg::Bid(m) if m.price == 0 => Err(AuctionError::ZeroPrice),
        _ => Ok(()),
    }
}

/// Executes `msg` signed by `signer` in the block described by `ctx`.
pub fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &AuctionMsg,
) -> Result<(), AuctionError> {
    match msg {
        AuctionMsg::PostOrder(m) => post_order::execute(state, ctx, signer, m),
        AuctionMsg::CancelOrder(m) => cancel_order::execute(state, ctx, signer, m),
        AuctionMsg::Bid(m) => bid::execute(state, ctx, signer, m),
        AuctionMsg::CommitResult(m) => commit_result::execute(state, ctx, signer, m),
        AuctionMsg::RevealResult(m) => reveal_result::execute(state, ctx, signer, m),
        AuctionMsg::WithdrawRewards(_) => withdraw_rewards::execute(state, signer),
        AuctionMsg::ReleaseLease(m) => release_lease::execute(state, ctx, signer, m),
        AuctionMsg::CompareReplicas(m) => compare_replicas::execute(state, ctx, signer, m),
        AuctionMsg::ConfirmReceipt(m) => confirm_receipt::execute(state, signer, m),
    }
}

#[cfg(test)]
mod clearing_tests;
#[cfg(test)]
mod compare_tests;
#[cfg(test)]
mod message_tests;
#[cfg(test)]
mod receipt_tests;
#[cfg(test)]
mod retire_tests;
#[cfg(test)]
mod settlement_tests;
#[cfg(test)]
mod test_steps;
#[cfg(test)]
mod verification_tests;
