use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::{
    AuctionError, AuctionRead, AuctionWrite, LeaseState, MsgCommitResult, ResultCommittedEvent,
};

pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &MsgCommitResult,
) -> Result<(), AuctionError> {
    let mut lease = state
        .lease(msg.lease_id)
        .ok_or(AuctionError::UnknownLease(msg.lease_id))?;
    if lease.provider != *signer {
        return Err(AuctionError::NotLeaseProvider(*signer));
    }
    if lease.state != LeaseState::Open {
        return Err(AuctionError::WrongLeaseState {
            id: lease.id,
            state: lease.state,
        });
    }
    if ctx.height > lease.deadline_height {
        return Err(AuctionError::CommitTooLate {
            deadline: lease.deadline_height,
            height: ctx.height,
        });
    }
    lease.commitment = Some(msg.commitment);
    lease.state = LeaseState::Committed;
    state.put_lease(&lease);
    state.emit(
        ResultCommittedEvent {
            lease_id: lease.id,
            order_id: lease.order_id,
            provider: lease.provider,
        }
        .into(),
    );
    Ok(())
}
