use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::{MsgUnbondVerifier, VerifyError, VerifyRead, VerifyWrite};

pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &MsgUnbondVerifier,
) -> Result<(), VerifyError> {
    if msg.amount == 0 {
        return Err(VerifyError::ZeroAmount);
    }
    let mut verifier = state
        .verifier(signer)
        .ok_or(VerifyError::NotAVerifier(*signer))?;
    let remaining =
        verifier
            .bonded
            .checked_sub(msg.amount)
            .ok_or(VerifyError::InsufficientBond {
                bonded: verifier.bonded,
                requested: msg.amount,
            })?;
    let min = state.verify_params().min_verifier_stake;
    if verifier.open_cases > 0 && remaining < min {
        return Err(VerifyError::UnbondWithOpenCases {
            remaining,
            min,
            open_cases: verifier.open_cases,
        });
    }
    ctx.height
        .checked_add(state.verify_params().verifier_unbonding_blocks)
        .ok_or(VerifyError::Overflow)?;
    state.begin_verifier_unbonding(signer, msg.amount, ctx.height)?;
    verifier.bonded = remaining;
    state.put_verifier(&verifier);
    Ok(())
}
