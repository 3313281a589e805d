use gpuchain_bank::BankWrite;
use gpuchain_types::{Address, BlockCtx, StateWrite};

use super::can_pay;
use crate::assign::{assign_to, draw};
use crate::{
    module_account, AppealedEvent, CaseStage, MsgAppeal, VerdictKind, VerifyError, VerifyRead,
    VerifyWrite,
};

/// The party a first verdict goes against locks the deposit; a second verifier is drawn.
pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &MsgAppeal,
) -> Result<(), VerifyError> {
    let mut case = state
        .case(msg.lease_id)
        .ok_or(VerifyError::NoCase(msg.lease_id))?;
    let (CaseStage::AppealWindow, Some(end), Some(first)) =
        (case.stage, case.appeal_end_height, case.verdicts.first())
    else {
        return Err(VerifyError::NotAppealable(msg.lease_id));
    };
    if ctx.height > end {
        return Err(VerifyError::AppealWindowClosed { end });
    }
    let entitled = match first.verdict {
        VerdictKind::Faulty => case.provider,
        VerdictKind::Honest => case.client,
    };
    if *signer != entitled {
        return Err(VerifyError::NotAppellant(*signer));
    }
    let deposit = state.verify_params().appeal_deposit;
    can_pay(state, signer, deposit)?;
    case.round = 1;
    case.reassigned = false;
    let verifier = draw(state, ctx, &case).ok_or(VerifyError::NoVerifierAvailable(msg.lease_id))?;

    if deposit > 0 {
        state.transfer(signer, &module_account::verify_appeals(), deposit)?;
    }
    case.appellant = Some(*signer);
    case.deposit = deposit;
    assign_to(state, ctx, &mut case, verifier)?;
    state.put_case(&case);
    state.emit(
        AppealedEvent {
            lease_id: msg.lease_id,
            appellant: *signer,
            deposit,
        }
        .into(),
    );
    Ok(())
}
