//! Routes each message to its module's handler.

use gpuchain_auction::AuctionRead;
use gpuchain_bank::BankRead;
use gpuchain_staking::StakingRead;
use gpuchain_tx::Msg;
use gpuchain_types::{Address, AppError, BlockCtx, StateWrite};
use gpuchain_verify::VerifyRead;

/// Runs one message on a fork of state; the caller discards the fork on error.
pub(crate) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &Msg,
) -> Result<(), AppError> {
    match msg {
        Msg::Bank(m) => {
            gpuchain_bank::handler::check_stateless(m, || state.bank_params())?;
            gpuchain_bank::handler::execute(state, signer, m)?;
        }
        Msg::Staking(m) => {
            gpuchain_staking::handler::check_stateless(m, &state.staking_params())?;
            gpuchain_staking::handler::execute(state, ctx, signer, m)?;
        }
        Msg::Slashing(m) => {
            gpuchain_slashing::handler::check_stateless(m)?;
            gpuchain_slashing::handler::execute(state, ctx, signer, m)?;
        }
        Msg::Auction(m) => {
            gpuchain_auction::handler::check_stateless(m, &state.auction_params())?;
            gpuchain_auction::handler::execute(state, ctx, signer, m)?;
        }
        Msg::Verify(m) => {
            gpuchain_verify::handler::check_stateless(m, &state.verify_params())?;
            gpuchain_verify::handler::execute(state, ctx, signer, m)?;
        }
        Msg::Upgrade(m) => {
            gpuchain_upgrade::handler::check_stateless(m)?;
            gpuchain_upgrade::handler::execute(state, ctx, signer, m)?;
        }
    }
    Ok(())
}
