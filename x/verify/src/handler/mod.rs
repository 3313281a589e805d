//! One file per message. `check_stateless` is pure; `execute` runs on a fork of state and
//! does every stateful check itself (no time-of-check/time-of-use gap), before its first
//! write, so a failed message leaves the fork untouched.

mod appeal;
mod bond_verifier;
mod commit_challenge;
mod recuse;
pub(crate) mod register_verifier;
mod reveal_challenge;
mod submit_verdict;
mod unbond_verifier;

use gpuchain_bank::BankRead;
use gpuchain_types::{Address, Amount, BlockCtx, StateRead, StateWrite};

use crate::{Case, CaseStage, VerifyError, VerifyMsg, VerifyParams, VerifyRead};

/// Checks that need no state.
pub fn check_stateless(msg: &VerifyMsg, params: &VerifyParams) -> Result<(), VerifyError> {
    match msg {
        VerifyMsg::RegisterVerifier(m) => register_verifier::check_stateless(m, params),
        VerifyMsg::BondVerifier(m) if m.amount == 0 => Err(VerifyError::ZeroAmount),
        VerifyMsg::UnbondVerifier(m) if m.amount == 0 => Err(VerifyError::ZeroAmount),
        _ => Ok(()),
    }
}

/// Executes `msg` signed by `signer` in the block described by `ctx`.
pub fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &VerifyMsg,
) -> Result<(), VerifyError> {
    match msg {
        VerifyMsg::RegisterVerifier(m) => register_verifier::execute(state, ctx.height, signer, m),
        VerifyMsg::BondVerifier(m) => bond_verifier::execute(state, signer, m),
        VerifyMsg::UnbondVerifier(m) => unbond_verifier::execute(state, ctx, signer, m),
        VerifyMsg::SubmitVerdict(m) => submit_verdict::execute(state, ctx, signer, m),
        VerifyMsg::Appeal(m) => appeal::execute(state, ctx, signer, m),
        VerifyMsg::CommitChallenge(m) => commit_challenge::execute(state, ctx, signer, m),
        VerifyMsg::RevealChallenge(m) => reveal_challenge::execute(state, ctx, signer, m),
        VerifyMsg::Recuse(m) => recuse::execute(state, ctx, signer, m),
    }
}

/// The case of `lease_id` when `signer` is its assigned verifier and its deadline has not
/// passed: what a verdict and a recusal both need.
fn assigned_case(
    state: &impl StateRead,
    ctx: &BlockCtx,
    signer: &Address,
    lease_id: u64,
) -> Result<Case, VerifyError> {
    let case = state.case(lease_id).ok_or(VerifyError::NoCase(lease_id))?;
    if case.stage != CaseStage::AwaitingVerdict {
        return Err(VerifyError::NotAwaitingVerdict(lease_id));
    }
    if case.assignee != Some(*signer) {
        return Err(VerifyError::NotAssigned {
            lease_id,
            signer: *signer,
        });
    }
    if ctx.height > case.deadline_height {
        return Err(VerifyError::VerdictTooLate {
            deadline: case.deadline_height,
            height: ctx.height,
        });
    }
    Ok(case)
}

/// Refuses when `payer` holds less than `required`.
fn can_pay(state: &impl StateRead, payer: &Address, required: Amount) -> Result<(), VerifyError> {
    let available = state.balance(payer);
    if available < required {
        return Err(VerifyError::InsufficientFunds {
            address: *payer,
            available,
            required,
        });
    }
    Ok(())
}

#[cfg(test)]
mod recuse_tests;
#[cfg(test)]
mod tests;
