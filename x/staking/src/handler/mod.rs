//! One file per message. `check_stateless` is pure; `execute` runs on a fork of state and
//! does every stateful check itself (no time-of-check/time-of-use gap), before its first
//! write, so a failed message leaves the fork untouched.

mod bond_provider;
pub(crate) mod create_validator;
mod delegate_self;
mod deregister_provider;
mod edit_validator;
pub(crate) mod register_provider;
mod unbond_provider;
mod unbond_validator;
mod update_provider;

use gpuchain_bank::BankRead;
use gpuchain_types::{Address, Amount, BlockCtx, StateWrite};

use crate::{StakingError, StakingMsg, StakingParams};

/// Checks that need no state.
pub fn check_stateless(msg: &StakingMsg, params: &StakingParams) -> Result<(), StakingError> {
    match msg {
        StakingMsg::CreateValidator(m) => create_validator::check_stateless(m, params),
        StakingMsg::DelegateSelf(m) => positive(m.amount),
        StakingMsg::UnbondValidator(m) => positive(m.amount),
        StakingMsg::EditValidator(m) => edit_validator::check_stateless(m, params),
        StakingMsg::RegisterProvider(m) => register_provider::check_stateless(m, params),
        StakingMsg::UpdateProvider(m) => m.attrs.validate(params),
        StakingMsg::BondProvider(m) => positive(m.amount),
        StakingMsg::UnbondProvider(m) => positive(m.amount),
        StakingMsg::DeregisterProvider(_) => Ok(()),
    }
}

/// Executes `msg` signed by `signer` in the block described by `ctx`.
pub fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &StakingMsg,
) -> Result<(), StakingError> {
    match msg {
        StakingMsg::CreateValidator(m) => create_validator::execute(state, ctx, signer, m),
        StakingMsg::DelegateSelf(m) => delegate_self::execute(state, signer, m),
        StakingMsg::UnbondValidator(m) => unbond_validator::execute(state, ctx, signer, m),
        StakingMsg::EditValidator(m) => edit_validator::execute(state, signer, m),
        StakingMsg::RegisterProvider(m) => register_provider::execute(state, ctx, signer, m),
        StakingMsg::UpdateProvider(m) => update_provider::execute(state, signer, m),
        StakingMsg::BondProvider(m) => bond_provider::execute(state, signer, m),
        StakingMsg::UnbondProvider(m) => unbond_provider::execute(state, ctx, signer, m),
        StakingMsg::DeregisterProvider(_) => deregister_provider::execute(state, ctx, signer),
    }
}

fn positive(amount: Amount) -> Result<(), StakingError> {
    if amount == 0 {
        return Err(StakingError::ZeroAmount);
    }
    Ok(())
}

/// The signer can pay `amount`.
fn can_pay(state: &impl BankRead, signer: &Address, amount: Amount) -> Result<(), StakingError> {
    let available = state.balance(signer);
    if available < amount {
        return Err(StakingError::InsufficientFunds {
            address: *signer,
            available,
            required: amount,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
