use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::{
    MsgReportUnresponsive, MsgServingHeartbeat, ServingError, ServingLeaseState, ServingRead,
    ServingReportEvent, ServingWrite, Timer,
};

pub(super) fn report(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    m: &MsgReportUnresponsive,
) -> Result<(), ServingError> {
    let mut lease = super::lease_for(state, m.lease_id, signer, super::Party::Client)?;
    if lease.state != ServingLeaseState::Serving
        || ctx.height > lease.end_height
        || lease.report_deadline.is_some()
    {
        return Err(ServingError::CannotReport(lease.id));
    }
    let deadline = ctx
        .height
        .checked_add(state.serving_params().report_window_blocks)
        .ok_or(ServingError::Overflow)?;
    lease.report_deadline = Some(deadline);
    state.put_serving_lease(&lease);
    state.set_serving_timer(deadline, Timer::Report(lease.id));
    state.emit(
        ServingReportEvent {
            lease_id: lease.id,
            provider: lease.provider,
            deadline,
        }
        .into(),
    );
    Ok(())
}

pub(super) fn heartbeat(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    m: &MsgServingHeartbeat,
) -> Result<(), ServingError> {
    let mut lease = super::lease_for(state, m.lease_id, signer, super::Party::Provider)?;
    let Some(deadline) = lease.report_deadline.filter(|d| ctx.height <= *d) else {
        return Err(ServingError::NoReport(lease.id));
    };
    lease.report_deadline = None;
    state.cancel_serving_timer(deadline, Timer::Report(lease.id));
    state.put_serving_lease(&lease);
    Ok(())
}
